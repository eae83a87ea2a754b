package live

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gleaner-rag/gleaner/index"
)

// ErrOvertaken is returned by Refresh when a commit changed the index
// while the sections were being built: they are stale again, and nothing
// was published (the next pause in the writes retries).
var ErrOvertaken = errors.New("live: a commit changed the index during the refresh; its sections are stale again")

// Refreshed is what a refresh did.
type Refreshed struct {
	Built []string // sections built again and published
	Stale []string // sections still stale (no refresh, or it failed)
}

// Refresh builds the index's stale sections that can be built in memory
// (index.RefreshStale), with the settings they were built with, and
// publishes the index with them: methods that refused a stale section
// answer again. Commits go on meanwhile; one that lands before the
// sections are ready makes them stale again (ErrOvertaken). The next
// checkpoint writes them to disk. A section whose build fails stays
// stale, and the error names it.
func (w *Writer) Refresh(ctx context.Context) (Refreshed, error) {
	w.rfMu.Lock()
	defer w.rfMu.Unlock()
	select {
	case <-w.stop:
		return Refreshed{}, ErrClosed
	default:
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(w.rfCtx, cancel)()
	w.mu.Lock()
	ix, err := w.cur.Load(), w.err
	w.mu.Unlock()
	if err != nil {
		return Refreshed{}, err
	}
	if len(ix.Refreshable()) == 0 {
		return Refreshed{Stale: staleSections(ix)}, nil
	}
	start := time.Now()
	built, berr := index.RefreshStale(ctx, ix, w.o.Refresh)
	if ctx.Err() != nil {
		return Refreshed{Stale: staleSections(ix)}, ctx.Err()
	}
	next, err := w.publishRefresh(ix, built)
	w.stats.rfNanos.Add(int64(time.Since(start)))
	if err != nil || berr != nil {
		w.stats.refreshFailures.Add(1)
	}
	if err != nil {
		return Refreshed{Stale: staleSections(ix)}, errors.Join(berr, err)
	}
	w.stats.refreshes.Add(1)
	out := Refreshed{Stale: staleSections(next)}
	for _, b := range built {
		out.Built = append(out.Built, b.Name)
	}
	w.o.Logger.Info("refreshed stale sections", "dir", w.dir, "built", out.Built, "still stale", out.Stale, "took", time.Since(start).Round(time.Millisecond))
	return out, berr
}

// publishRefresh publishes ix with the built sections, unless a commit
// replaced ix meanwhile, and asks for a checkpoint to save them.
func (w *Writer) publishRefresh(ix *index.Index, built []*index.BuiltSection) (*index.Index, error) {
	if len(built) == 0 {
		return ix, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return nil, w.err
	}
	if w.cur.Load() != ix {
		return nil, ErrOvertaken
	}
	next, err := ix.WithSections(built...)
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	w.publish(next)
	w.unsaved.Store(true)
	select {
	case w.ck <- struct{}{}:
	default:
	}
	return next, nil
}

// staleSections names ix's stale sections.
func staleSections(ix *index.Index) []string {
	if ix.Meta.Stale == nil {
		return nil
	}
	return ix.Meta.Stale.Sections
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
	for {
		select {
		case <-w.stop:
			return
		case <-w.rf:
			quiet.Reset(w.o.RefreshAfter)
		case <-quiet.C:
			if len(w.Index().Refreshable()) == 0 {
				continue
			}
			_, err := w.Refresh(w.rfCtx)
			switch {
			case errors.Is(err, ErrOvertaken):
				w.o.Logger.Info("refresh overtaken by a commit; the next pause retries", "dir", w.dir)
			case err != nil && w.rfCtx.Err() == nil:
				w.o.Logger.Error("refresh failed; those sections stay stale until built", "dir", w.dir, "err", err)
			}
		}
	}
}
