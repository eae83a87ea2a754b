package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index/live"
)

// merges measures background merges on a live index an earlier run left
// (ingest leaves one of ~110,000 passages): it deletes passages in place
// until they pass share (-merge-share), then merges (live.Writer.Merge) with no
// writes, and again with writers committing beside it, printing how long
// each merge took and, for the second, the commits' latency meanwhile
// (the writer's merge line, on stderr, says how many commits it replayed
// and how many with the commits held).
func merges(c *corpus.Corpus, dir string, writers, batch int, seed uint64, share float64, profile string) error {
	if writers < 1 || batch < 1 || !(share > 0 && share < 0.5) {
		return fmt.Errorf("merge: want -writers and -batch ≥ 1 and -merge-share in (0, 0.5), got %d, %d, %v", writers, batch, share)
	}
	ctx := context.Background()
	be, err := engine.Open("cpu")
	if err != nil {
		return err
	}
	o := live.DefaultOptions(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	o.Refresh.Backend, o.DeletedShare, o.MergeShare = be, 0.9, 0 // merged by hand below
	w, err := live.Open(ctx, dir, o)
	if err != nil {
		return err
	}
	defer w.Close()
	g := newGenerator(c, seed)
	g.next = int(time.Now().UnixMilli())
	for _, n := range []int{0, writers} {
		start := time.Now()
		for ix := w.Index(); float64(ix.Deleted()) < share*float64(ix.N()); ix = w.Index() {
			b, _ := g.batchMix(ix, batch, 0, 0)
			if _, err := w.Commit(ctx, b); err != nil {
				return fmt.Errorf("deleting: %w", err)
			}
		}
		ix := w.Index()
		fmt.Printf("%d of %d passages deleted in place (%v)\n", ix.Deleted(), ix.N(), time.Since(start).Round(time.Millisecond))
		stopProfile, err := startProfile(profileFor(profile, fmt.Sprint("beside", n)))
		if err != nil {
			return err
		}
		var mu sync.Mutex
		var lat []time.Duration
		ws := commitBeside(ctx, w, c, seed+1, n, batch, func(d time.Duration, _ bool) {
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		})
		start = time.Now()
		merged, err := w.Merge(ctx)
		took := time.Since(start)
		if werr := ws.Stop(); werr != nil {
			return werr
		}
		if err := stopProfile(); err != nil {
			return err
		}
		if err != nil {
			return err
		}
		fmt.Printf("merge with %d writers beside it: %d deleted passages left out, %d passages, %v", n, merged, w.Index().N(), took.Round(time.Millisecond))
		if len(lat) > 0 {
			slices.Sort(lat)
			fmt.Printf("; %d commits meanwhile, median %v, p99 %v, longest %v", len(lat), pct(lat, 0.5).Round(time.Millisecond),
				pct(lat, 0.99).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
		}
		fmt.Println()
	}
	return nil
}

// beside is writers committing beside a measurement (commitBeside).
type beside struct {
	stop chan struct{}
	errs chan error // a writer's error other than a conflict; it stopped
	wg   sync.WaitGroup
}

// commitBeside starts n writers committing mixed batches (30 % adds,
// 70 % replaces and deletes; writer k seeded seed+k, its added ids its
// own) until Stop, telling done (which must be safe for concurrent use)
// how long each commit took and whether it applied (or met a conflict
// with another writer's).
func commitBeside(ctx context.Context, w *live.Writer, c *corpus.Corpus, seed uint64, n, batch int, done func(took time.Duration, applied bool)) *beside {
	b := &beside{stop: make(chan struct{}), errs: make(chan error, n)}
	for k := range n {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			g := newGenerator(c, seed+uint64(k))
			g.next = int(time.Now().UnixMilli()) + (k+1)*1_000_000_000
			for {
				select {
				case <-b.stop:
					return
				default:
				}
				batch, _ := g.batchMix(w.Index(), batch, 3, 7)
				t := time.Now()
				_, err := w.Commit(ctx, batch)
				if err != nil && !isConflict(err) {
					b.errs <- err
					return
				}
				done(time.Since(t), err == nil)
			}
		}()
	}
	return b
}

// Stop stops the writers and returns the first error one met.
func (b *beside) Stop() error {
	close(b.stop)
	b.wg.Wait()
	select {
	case err := <-b.errs:
		return err
	default:
		return nil
	}
}
