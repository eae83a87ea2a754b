package live

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/parallel"
)

// replayGroup is how many changes a replayer applies at once.
const replayGroup = 4096

// A replayer applies logged records to an index with its own catalog and
// kind updaters, as Open replays the log onto the index on disk (a merge
// replays through a catchUp instead). A group of records whose change
// cannot be applied (each record was, when it was committed) is applied a
// record at a time, as its commit did.
type replayer struct {
	w     *Writer
	ix    *index.Index
	cat   *catalog
	kinds []index.KindUpdater
	p     *pending
	recs  [][]op // the records in p
}

func (w *Writer) newReplayer(ix *index.Index, cat *catalog, kinds []index.KindUpdater) *replayer {
	return &replayer{w: w, ix: ix, cat: cat, kinds: kinds, p: newPending(ix, cat)}
}

// accept checks a record and adds it to the pending change.
func (r *replayer) accept(ops []op) error {
	if err := r.p.take(ops); err != nil {
		return err
	}
	r.recs = append(r.recs, ops)
	return nil
}

// full reports whether the pending change should be applied now.
func (r *replayer) full() bool { return r.p.ops >= replayGroup }

// flush applies the pending change.
func (r *replayer) flush(ctx context.Context) error {
	if r.p.empty() {
		return nil
	}
	w := r.w
	ch := w.changeWith(r.p, r.kinds)
	next, err := r.ix.Apply(ctx, ch)
	if err != nil && ctx.Err() != nil {
		return ctx.Err() // not the records: no fallback
	}
	if err != nil && (len(r.recs) > 1 || ch.Tombstone) {
		w.o.Logger.Warn("replay: a group of records could not be applied together; applying them one at a time", "dir", w.dir, "records", len(r.recs), "err", err)
		r.cat = newCatalog(r.ix)
		r.kinds = w.kindUpdaters(ctx, r.ix)
		next, err = r.each(ctx)
	}
	if err != nil {
		return err
	}
	r.ix, r.p, r.recs = next, newPending(next, r.cat), nil
	return nil
}

// each applies the pending records to r.ix one at a time, each in place
// and, failing that, renumbered, as its commit did.
func (r *replayer) each(ctx context.Context) (*index.Index, error) {
	w, base := r.w, r.ix
	for _, ops := range r.recs {
		p := newPending(base, r.cat)
		if err := p.accept(ops); err != nil {
			return nil, err
		}
		ch := w.changeWith(p, r.kinds)
		next, err := base.Apply(ctx, ch)
		if err != nil && ch.Tombstone {
			r.kinds = w.kindUpdaters(ctx, base)
			ch.Kinds, ch.Tombstone = r.kinds, false
			next, err = base.Apply(ctx, ch)
		}
		if err != nil {
			return nil, err
		}
		base = next
	}
	return base, nil
}

// A mergeTail collects the commits made while a merge compacts (under
// Writer.mu), for the merge to replay onto the compacted index.
type mergeTail struct {
	entries []tailEntry
	// broken: the index or the kind updaters were replaced other than by
	// a commit (a refit, updaters made anew after a failed change): the
	// merge's compaction and the rows it recorded no longer lead to them.
	broken bool
}

// A tailEntry is one commit made during a merge: its log records, and
// the rows its kind updaters remade.
type tailEntry struct {
	payloads [][]byte
	rows     kindRows
}

// kindRows are rows of derived edge kinds by passage id: kind → source
// → its edges of the kind. A merge replays commits with the rows their
// updaters remade, by id, rather than through the updaters: those
// already followed the commits (their state is the writer's, which a
// second pass would count twice), and making them anew for the
// compacted index costs a scan of every passage.
type kindRows map[string]map[string][]idEdge

type idEdge struct {
	dst string
	w   float32
}

// recorder is a row updater that notes, by id, the rows it remakes.
type recorder struct {
	index.RowUpdater
	rows map[string][]idEdge
}

// recorders wrap kinds (row updaters, checked by mergeLocked) to note
// their rows into rows.
func recorders(kinds []index.KindUpdater, rows kindRows) []index.KindUpdater {
	out := make([]index.KindUpdater, len(kinds))
	for i, u := range kinds {
		m := map[string][]idEdge{}
		rows[u.Kind()] = m
		out[i] = &recorder{RowUpdater: u.(index.RowUpdater), rows: m}
	}
	return out
}

func (r *recorder) Update(context.Context, *index.Index, *index.Index, *index.Change) ([]graphops.Edge, error) {
	return nil, errRowsOnly
}

var errRowsOnly = errors.New("live: a merge follows derived kinds by their rows only")

func (r *recorder) UpdateRows(ctx context.Context, before, after *index.Index, ch *index.Change) ([]int32, []graphops.Edge, error) {
	rows, edges, err := r.RowUpdater.UpdateRows(ctx, before, after, ch)
	if err != nil {
		return nil, nil, err
	}
	i := 0
	for _, v := range rows { // both by source, ascending
		for i < len(edges) && edges[i].Src < v {
			i++
		}
		var out []idEdge
		for ; i < len(edges) && edges[i].Src == v; i++ {
			out = append(out, idEdge{strings.Clone(after.NodeID(int(edges[i].Dst))), edges[i].W})
		}
		r.rows[strings.Clone(after.NodeID(int(v)))] = out
	}
	return rows, edges, nil
}

// replayed is a row updater that gives the rows commits recorded,
// numbered in the index a merge replays them onto: a row or an edge whose
// passage the change left out (deleted later in the group) goes.
type replayed struct {
	kind string
	rows map[string][]idEdge
}

func (r *replayed) Kind() string { return r.kind }

func (r *replayed) Update(context.Context, *index.Index, *index.Index, *index.Change) ([]graphops.Edge, error) {
	return nil, errRowsOnly
}

func (r *replayed) UpdateRows(_ context.Context, _, after *index.Index, _ *index.Change) ([]int32, []graphops.Edge, error) {
	var rows []int32
	var edges []graphops.Edge
	for id, es := range r.rows {
		v, ok := after.Lookup(id)
		if !ok {
			continue
		}
		rows = append(rows, v)
		for _, e := range es {
			if d, ok := after.Lookup(e.dst); ok {
				edges = append(edges, graphops.Edge{Src: v, Dst: d, W: e.w})
			}
		}
	}
	slices.Sort(rows)
	slices.SortFunc(edges, func(a, b graphops.Edge) int {
		return cmp.Or(cmp.Compare(a.Src, b.Src), cmp.Compare(a.Dst, b.Dst))
	})
	return rows, edges, nil
}

// A catchUp replays a merge's tail onto the compacted index, whole
// commits at a time, grouped up to replayGroup changes per index made.
type catchUp struct {
	w     *Writer
	ix    *index.Index
	p     *pending
	kinds []string // the writer's derived kinds
	rows  kindRows // the rows of the commits in p, the later winning
}

func (w *Writer) newCatchUp(ix *index.Index, kinds []string) *catchUp {
	return &catchUp{w: w, ix: ix, p: newPending(ix, newCatalog(ix)), kinds: kinds, rows: kindRows{}}
}

// replay adds the entries to the pending change, applying it each time
// it reaches replayGroup changes and at the end.
func (c *catchUp) replay(ctx context.Context, entries []tailEntry) error {
	for i, e := range entries {
		for _, b := range e.payloads {
			ops, _, err := decodeRecord(b)
			if err == nil {
				err = c.p.take(ops)
			}
			if err != nil {
				return fmt.Errorf("commit %d of %d: %w", i+1, len(entries), err)
			}
		}
		for kind, rows := range e.rows {
			if c.rows[kind] == nil {
				c.rows[kind] = map[string][]idEdge{}
			}
			maps.Copy(c.rows[kind], rows)
		}
		if c.p.ops >= replayGroup {
			if err := c.flush(ctx); err != nil {
				return err
			}
		}
	}
	return c.flush(ctx)
}

// flush applies the pending change with the recorded rows.
func (c *catchUp) flush(ctx context.Context) error {
	if c.p.empty() {
		return nil
	}
	kinds := make([]index.KindUpdater, len(c.kinds))
	for i, k := range c.kinds {
		kinds[i] = &replayed{kind: k, rows: c.rows[k]}
	}
	next, err := c.ix.Apply(ctx, c.w.changeWith(c.p, kinds))
	if err != nil {
		return err
	}
	c.ix, c.p, c.rows = next, newPending(next, c.p.cat), kindRows{}
	return nil
}

// mergeHeld is how many commits made during a merge it replays with the
// commits held; more are replayed beside the commits first, and again for
// those that came meanwhile, up to mergeRounds times, after which a merge
// still further behind gives up (ErrMergeBehind).
const (
	mergeHeld   = 64
	mergeRounds = 4
)

// ErrMergeBehind is a merge that the commits outpaced: after mergeRounds
// replays beside them, more than mergeHeld had come meanwhile. Nothing
// was published; the commits go on, and the one whose deletions pass
// Options.DeletedShare renumbers the index itself.
var ErrMergeBehind = errors.New("live: the commits outpaced the merge's replay of them")

// ErrMergeAbandoned is a merge whose compaction no longer leads to the
// current index (a refit replaced it, or the writer stopped): nothing was
// published, and a later one starts anew.
var ErrMergeAbandoned = errors.New("live: the index was replaced during the merge")

// Merge renumbers the index without the passages deleted in place while
// commits go on: it compacts the index as it stands, replays onto the
// compacted index the records committed meanwhile (beside the commits,
// then the last few with them held, as briefly as it can) and publishes
// it. Readers never wait; commits wait only for the last replay. It
// returns how many deleted passages the compaction left out (0: there
// were none; those the commits meanwhile deleted stay deleted in place).
func (w *Writer) Merge(ctx context.Context) (int, error) {
	w.rfMu.Lock()
	defer w.rfMu.Unlock()
	return w.mergeLocked(ctx)
}

// mergeLocked is Merge under rfMu (one merge or refresh at a time).
func (w *Writer) mergeLocked(ctx context.Context) (int, error) {
	ctx, cancel, err := w.backgroundCtx(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	w.mu.Lock()
	ix, err := w.cur.Load(), w.err
	if err == nil {
		err = rowKinds(w.kinds)
	}
	if err != nil || ix.Deleted() == 0 {
		w.mu.Unlock()
		return 0, err
	}
	var kinds []string // read under mu: a failed commit may remake them
	for _, u := range w.kinds {
		kinds = append(kinds, u.Kind())
	}
	tail := &mergeTail{}
	w.tail = tail
	w.mu.Unlock()
	defer w.endTail(tail)
	start := time.Now()
	var caught caughtUp
	w.work(func() { caught, err = w.merge(ctx, ix, kinds, tail) })
	took := time.Since(start)
	if err != nil {
		if w.rfCtx.Err() == nil { // not Close cancelling it
			w.stats.mergeFailures.Add(1)
		}
		return 0, fmt.Errorf("live: merging %s: %w", w.dir, err)
	}
	w.stats.merges.Add(1)
	w.stats.mergeNanos.Add(int64(took))
	w.o.Logger.Info("merged: renumbered the index without the passages deleted in place", "dir", w.dir, "deleted", ix.Deleted(), "passages", caught.live,
		"commits replayed", caught.replayed, "of them with the commits held", caught.held, "took", took.Round(time.Millisecond))
	return ix.Deleted(), nil
}

// rowKinds checks that every kind updater can say which rows it remakes
// (index.RowUpdater): a merge replays commits by those rows.
func rowKinds(kinds []index.KindUpdater) error {
	for _, u := range kinds {
		if _, ok := u.(index.RowUpdater); !ok {
			return fmt.Errorf("live: the %s edges' updater does not say which rows it remakes, which a merge needs: the commit past Options.DeletedShare renumbers instead", u.Kind())
		}
	}
	return nil
}

// endTail stops collecting commits for tail.
func (w *Writer) endTail(tail *mergeTail) {
	w.mu.Lock()
	if w.tail == tail {
		w.tail = nil
	}
	w.mu.Unlock()
}

// caughtUp is how many commits a merge replayed, how many of them with
// the commits held, and the live passages of the index it published.
type caughtUp struct{ replayed, held, live int }

// merge compacts ix, catches up with tail (replaying the rows of kinds)
// and publishes the result.
func (w *Writer) merge(ctx context.Context, ix *index.Index, kinds []string, tail *mergeTail) (caughtUp, error) {
	// Background work beside the commits' CPU gate: one goroutine, which
	// yields its core to waiting queries as it goes.
	bg := parallel.WithWorkers(parallel.Background(ctx), 1)
	src, err := ix.Compact(bg)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return caughtUp{}, err
	}
	c := w.newCatchUp(src, kinds)
	if w.afterCompact != nil {
		w.afterCompact()
	}
	done := 0
	for round := 0; ; round++ {
		entries, held, err := w.nextEntries(bg, tail, c, done, round)
		if err != nil || held {
			return caughtUp{replayed: done + len(entries), held: len(entries), live: c.ix.Live()}, err
		}
		if err := c.replay(bg, entries); err != nil {
			return caughtUp{}, fmt.Errorf("replaying the commits made during the merge: %w", err)
		}
		done += len(entries)
	}
}

// nextEntries takes the commits of tail after the first done. When they
// are few (mergeHeld), it replays them onto c's index with the commits
// held and publishes it (held); when after the last round they are still
// many, it gives up (ErrMergeBehind).
func (w *Writer) nextEntries(ctx context.Context, tail *mergeTail, c *catchUp, done, round int) (entries []tailEntry, held bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.tailErr(ctx, tail); err != nil {
		return nil, false, err
	}
	entries = tail.entries[done:]
	switch {
	case len(entries) <= mergeHeld:
		return entries, true, w.publishMerge(ctx, c, entries)
	case round == mergeRounds:
		return nil, false, fmt.Errorf("%w: %d commits behind after %d rounds", ErrMergeBehind, len(entries), round)
	}
	return entries, false, nil
}

// tailErr is why a merge cannot publish (under w.mu).
func (w *Writer) tailErr(ctx context.Context, tail *mergeTail) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case w.err != nil:
		return w.err
	case tail.broken:
		return ErrMergeAbandoned
	}
	return nil
}

// publishMerge replays the last commits onto c's index and publishes it
// (under w.mu: the commits wait). The writer's catalog and kind updaters
// stay: they hold passages by id, and they followed every commit.
func (w *Writer) publishMerge(ctx context.Context, c *catchUp, entries []tailEntry) error {
	if err := c.replay(ctx, entries); err != nil {
		return fmt.Errorf("replaying the commits made during the merge: %w", err)
	}
	w.tail = nil
	w.publish(c.ix)
	w.stats.compactions.Add(1)
	return nil
}

// wakeMerge wakes the merge loop when next has more deleted nodes than
// MergeShare allows (under w.mu, after a commit), unless a merge could
// not replay the kinds (rowKinds: it would fail at every commit).
func (w *Writer) wakeMerge(next *index.Index) {
	if w.o.MergeShare > 0 && w.tail == nil && float64(next.Deleted()) > w.o.MergeShare*float64(next.N()) && rowKinds(w.kinds) == nil {
		select {
		case w.mg <- struct{}{}:
		default:
		}
	}
}

// mergeBackoff bounds how often failed background merges retry.
const mergeBackoff = time.Second

// mergeLoop runs the merges wakeMerge asks for, one at a time. After a
// failure it waits as long as the merge took (at least mergeBackoff)
// before the next: a merge that keeps failing must not take a core.
func (w *Writer) mergeLoop() {
	defer close(w.mgDone)
	for {
		select {
		case <-w.stop:
			return
		case <-w.mg:
		}
		start := time.Now()
		_, err := w.Merge(w.rfCtx)
		switch {
		case err == nil:
			continue
		case w.rfCtx.Err() != nil || errors.Is(err, ErrClosed):
			return
		}
		wait := max(mergeBackoff, time.Since(start))
		level := slog.LevelWarn
		if errors.Is(err, ErrMergeAbandoned) || errors.Is(err, ErrMergeBehind) {
			// the writes' doing, not a fault; a refit it waited for is
			// no measure of what a retry costs
			level, wait = slog.LevelInfo, mergeBackoff
		}
		w.o.Logger.Log(context.Background(), level, "background merge gave up; the passages stay deleted in place, and a later commit past the share retries", "dir", w.dir, "err", err, "retry after", wait.Round(time.Millisecond))
		select {
		case <-w.stop:
			return
		case <-time.After(wait):
		}
	}
}
