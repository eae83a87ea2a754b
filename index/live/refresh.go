package live

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gleaner-rag/gleaner/index"
)

// ErrOvertaken is returned by Refresh when a commit changed the index
// while the sections were being built: they are stale again, and nothing
// was published (the next pause in the writes retries).
var ErrOvertaken = errors.New("live: a commit changed the index during the refresh; its sections are stale again")

// Refreshed is what a refresh did.
type Refreshed struct {
	Built []string // sections and edge kinds built again and published
	Stale []string // sections and edge kinds still stale (no refresh, or it failed)
	// Compacted is how many passages deleted in place the published index
	// renumbered away (a refresh builds from the index compacted, and
	// with nothing stale it publishes the compaction alone).
	Compacted int
}

// Refresh builds the index's stale sections that can be built in memory
// (index.RefreshStale), with the settings they were built with, and
// publishes the index with them: methods that refused a stale section
// answer again. Commits go on meanwhile; one that lands before the
// sections are ready makes them stale again (ErrOvertaken). The next
// checkpoint writes them to disk. A section whose build fails stays
// stale, and the error names it.
func (w *Writer) Refresh(ctx context.Context) (Refreshed, error) { return w.refresh(ctx, false) }

// refresh is Refresh; with hold, the commits wait until it is done.
func (w *Writer) refresh(ctx context.Context, hold bool) (Refreshed, error) {
	w.rfMu.Lock()
	defer w.rfMu.Unlock()
	ctx, cancel, err := w.backgroundCtx(ctx)
	if err != nil {
		return Refreshed{}, err
	}
	defer cancel()
	w.mu.Lock()
	ix, err := w.cur.Load(), w.err
	if hold {
		defer w.mu.Unlock()
	} else {
		w.mu.Unlock()
	}
	if err != nil {
		return Refreshed{}, err
	}
	if len(ix.Refreshable()) == 0 && ix.Deleted() == 0 {
		return Refreshed{Stale: StaleNames(ix)}, nil
	}
	if len(ix.Refreshable()) == 0 && !hold {
		// deleted passages alone: a merge, which commits do not overtake
		n, err := w.mergeLocked(ctx)
		return Refreshed{Stale: StaleNames(w.Index()), Compacted: n}, err
	}
	start := time.Now()
	src, err := ix.Compact(ctx) // sections are built over the live nodes alone
	if err != nil {
		return Refreshed{Stale: StaleNames(ix)}, err
	}
	if len(ix.Refreshable()) == 0 { // deleted passages alone: the compaction is the refresh
		took := time.Since(start)
		w.stats.rfNanos.Add(int64(took))
		w.lastBuild.Store(int64(took)) // quietFor waits at least as long before the next
		return w.publishCompaction(ctx, ix, src, hold, took)
	}
	published := false
	if src != ix {
		defer func() {
			if !published {
				src.Close() // what the refresh bound to a device (the published index binds its own)
			}
		}()
	}
	built, berr := index.RefreshStale(ctx, src, w.o.Refresh)
	if ctx.Err() != nil {
		return Refreshed{Stale: StaleNames(ix)}, ctx.Err()
	}
	var next *index.Index
	var put []string
	var perr error
	if !built.Empty() {
		next, put, perr = w.publishRefresh(ix, src, built, hold)
	}
	took := time.Since(start)
	w.stats.rfNanos.Add(int64(took))
	w.lastBuild.Store(int64(took))
	if len(put) == 0 {
		err := errors.Join(berr, perr)
		if err != nil {
			w.stats.refreshFailures.Add(1)
		}
		if ix.Deleted() > 0 && !errors.Is(err, ErrOvertaken) && ctx.Err() == nil {
			// the sections did not build: the compaction stands on its own
			published = true // publishCompaction publishes or closes it
			r, cerr := w.publishCompaction(ctx, ix, src, hold, took)
			return r, errors.Join(err, cerr)
		}
		return Refreshed{Stale: StaleNames(ix)}, err
	}
	if berr != nil || perr != nil {
		w.stats.refreshFailures.Add(1)
	}
	w.stats.refreshes.Add(1)
	out := Refreshed{Built: put, Stale: StaleNames(next), Compacted: ix.Deleted()}
	if ix.Deleted() > 0 {
		w.stats.compactions.Add(1)
	}
	w.o.Logger.Info("refreshed stale sections", "dir", w.dir, "built", out.Built, "still stale", out.Stale, "took", took.Round(time.Millisecond), "commits held", hold)
	return out, errors.Join(berr, perr)
}

// publishRefresh loads the built sections into src (ix compacted, or ix)
// and publishes it, unless a commit replaced ix meanwhile (ErrOvertaken);
// it asks for a checkpoint to save them. put names those that loaded.
// held: the caller holds w.mu (the commits wait).
func (w *Writer) publishRefresh(ix, src *index.Index, built *index.Built, held bool) (next *index.Index, put []string, err error) {
	next, put, lerr := src.WithBuilt(built) // loads run outside the lock: commits go on
	if len(put) == 0 {
		next.Close()
		return nil, nil, fmt.Errorf("live: %w", lerr)
	}
	if !held {
		w.mu.Lock()
		defer w.mu.Unlock()
	}
	switch {
	case w.err != nil:
		err = w.err
	case w.cur.Load() != ix:
		err = ErrOvertaken
	}
	if err != nil {
		next.Close()
		return nil, nil, errors.Join(lerr, err)
	}
	w.publish(next)
	w.unsaved.Store(true)
	select {
	case w.ck <- struct{}{}:
	default:
	}
	if lerr != nil {
		lerr = fmt.Errorf("live: %w", lerr)
	}
	return next, put, lerr
}

// publishCompaction publishes src, ix without the passages it deleted in
// place, unless a commit replaced ix meanwhile (ErrOvertaken: src is
// closed, and the next pause in the writes retries). held: the caller
// holds w.mu; took is how long the compaction took.
func (w *Writer) publishCompaction(ctx context.Context, ix, src *index.Index, held bool, took time.Duration) (Refreshed, error) {
	if !held {
		w.mu.Lock()
		defer w.mu.Unlock()
	}
	var err error
	switch {
	case ctx.Err() != nil:
		err = ctx.Err()
	case w.err != nil:
		err = w.err
	case w.cur.Load() != ix:
		err = ErrOvertaken
	}
	if err != nil {
		w.stats.refreshFailures.Add(1)
		src.Close()
		return Refreshed{Stale: StaleNames(ix)}, err
	}
	w.publish(src)
	w.stats.compactions.Add(1)
	w.o.Logger.Info("compacted the passages deleted in place", "dir", w.dir, "deleted", ix.Deleted(), "nodes", src.N(), "took", took.Round(time.Millisecond))
	return Refreshed{Stale: StaleNames(src), Compacted: ix.Deleted()}, nil
}

// backgroundCtx is ctx for a refresh or a merge, ended by Close too;
// ErrClosed once the writer is closing.
func (w *Writer) backgroundCtx(ctx context.Context) (context.Context, context.CancelFunc, error) {
	select {
	case <-w.stop:
		return nil, nil, ErrClosed
	default:
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(w.rfCtx, cancel)
	return ctx, func() { stop(); cancel() }, nil
}

// StaleNames names ix's stale sections and edge kinds (as
// index.KindLabel names them); nil when nothing is stale.
func StaleNames(ix *index.Index) []string {
	s := ix.Meta.Stale
	if s == nil {
		return nil
	}
	out := slices.Clone(s.Sections)
	for _, k := range s.GraphKinds {
		out = append(out, index.KindLabel(k))
	}
	return out
}

// refreshLoop refreshes once the writes have paused for RefreshAfter
// (and once after open, for an index opened stale).
func (w *Writer) refreshLoop() {
	defer close(w.rfDone)
	if w.o.RefreshAfter <= 0 {
		return
	}
	quiet := time.NewTimer(w.o.RefreshAfter)
	defer quiet.Stop()
	var bound staleBound
	defer bound.stop()
	heldFailed := false // a held refresh failed: holding the writes again would likely fail again
	for {
		select {
		case <-w.stop:
			return
		case <-w.rf:
			quiet.Reset(w.quietFor())
			if w.o.RefreshWithin > 0 && !heldFailed && len(w.Index().Refreshable()) > 0 {
				bound.arm(w.o.RefreshWithin)
			}
		case <-bound.c:
			bound.stop()
			var closing bool
			var err error
			w.work(func() { closing, err = w.backgroundRefresh(true) })
			if closing {
				return
			}
			heldFailed = err != nil
		case <-quiet.C:
			if ix := w.Index(); len(ix.Refreshable()) == 0 && ix.Deleted() == 0 {
				continue
			}
			var closing bool
			w.work(func() { closing, _ = w.backgroundRefresh(false) })
			if closing {
				return
			}
			if len(w.Index().Refreshable()) == 0 {
				bound.stop()
				heldFailed = false
			}
		}
	}
}

// backgroundRefresh runs a refresh for refreshLoop and logs how it went;
// closing: the writer is closing.
func (w *Writer) backgroundRefresh(hold bool) (closing bool, err error) {
	_, err = w.refresh(w.rfCtx, hold)
	switch {
	case w.rfCtx.Err() != nil || errors.Is(err, ErrClosed):
		return true, err
	case errors.Is(err, ErrMergeAbandoned) || errors.Is(err, ErrMergeBehind):
		w.o.Logger.Info("the refresh's merge gave up; the next pause in the writes retries", "dir", w.dir, "err", err)
	case hold && err != nil:
		w.o.Logger.Error("refresh holding the writes failed; the next one waits for a pause in the writes", "dir", w.dir, "err", err)
	case errors.Is(err, ErrOvertaken) && w.o.RefreshWithin > 0:
		w.o.Logger.Info("refresh overtaken by a commit; it runs again once the writes pause, or holding the commits once the sections have been stale for RefreshWithin", "dir", w.dir, "within", w.o.RefreshWithin)
	case errors.Is(err, ErrOvertaken):
		w.o.Logger.Info("refresh overtaken by a commit; it runs again once the writes pause", "dir", w.dir, "err", err)
	case err != nil:
		w.o.Logger.Error("refresh failed; those sections stay stale until built", "dir", w.dir, "err", err)
	}
	return false, err
}

// staleBound is the timer of Options.RefreshWithin: armed when a commit
// leaves sections stale, it fires once they have been stale that long.
type staleBound struct {
	t *time.Timer
	c <-chan time.Time // nil while disarmed
}

func (b *staleBound) arm(d time.Duration) {
	if b.t == nil {
		b.t = time.NewTimer(d)
		b.c = b.t.C
	}
}

func (b *staleBound) stop() {
	if b.t != nil {
		b.t.Stop()
		b.t, b.c = nil, nil
	}
}

// quietFor is how long the writes must pause before a background
// refresh: RefreshAfter, or as long as the last refresh took when that
// was longer (a pause shorter than a build would likely be overtaken).
func (w *Writer) quietFor() time.Duration {
	return max(w.o.RefreshAfter, time.Duration(w.lastBuild.Load()))
}

// Refit fits the index's LSA basis again on its passages as they are and
// makes every vector anew (index.Index.Refit), writes the result over the
// index on disk and publishes it. What was derived from the vectors goes
// stale; Refresh builds it again. Commits wait meanwhile: one that came
// after would embed its passages with the new basis, which must be on
// disk before the log holds such vectors (a replay onto the old basis
// would mix the two).
func (w *Writer) Refit(ctx context.Context) error {
	w.ckMu.Lock()
	defer w.ckMu.Unlock()
	if w.logClosed {
		return ErrClosed
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.following() {
		return fmt.Errorf("live: the index follows the log %s: a refit here would give it vectors the other replicas lack; detach it first (Detach, gleaner index detach) and start a fleet anew from it", w.originName())
	}
	start := time.Now()
	next, err := w.cur.Load().Refit(ctx)
	if err != nil {
		return fmt.Errorf("live: %w", err)
	}
	if err := w.log.Rotate(); err != nil {
		return err
	}
	seq := w.log.Last()
	// Not cancelled with ctx: a write stopped midway stops the writer
	// (below), and a caller gone (a client hanging up) is no reason.
	sum, err := next.WriteTo(context.WithoutCancel(ctx), w.dir, w.liveState(seq, w.source.Load()), w.sum)
	if err != nil {
		next.Close()
		// The folder may hold either basis now (a failure after the swap
		// cannot be told from one before it here): a commit embedding with
		// the old one could then be replayed onto the new. Stop; a reopen
		// reads whichever the folder holds, and the log is intact.
		w.err = fmt.Errorf("%w: writing the refitted index %s failed: %v (the writer stopped: reopen the index)", ErrClosed, w.dir, err)
		return w.err
	}
	w.sum, w.written = sum, seq
	w.unsaved.Store(false)
	if w.tail != nil {
		w.tail.broken = true // a merge's compaction no longer leads here
	}
	w.publish(next)
	if err := w.log.Drop(seq); err != nil {
		return fmt.Errorf("live: refit of %s: dropping the log's older segments: %w", w.dir, err)
	}
	w.o.Logger.Info("refitted the LSA basis", "dir", w.dir, "dims", next.Meta.Dims, "nodes", next.Live(), "took", time.Since(start).Round(time.Millisecond))
	return nil
}
