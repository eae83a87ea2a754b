// Package parallel runs per-item work of long builds on a bounded number
// of goroutines, with progress and first-error cancellation.
package parallel

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gleaner-rag/gleaner/internal/progress"
)

// ForEach calls fn(ctx, i) for i in [0, n) on at most workers goroutines
// under a progress stage; the first error cancels the rest and is
// returned.
func ForEach(ctx context.Context, n, workers int, p progress.Reporter, stage string, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	p.Stage(stage, n)
	defer p.Finish()
	for w := 0; w < min(workers, max(1, n)); w++ { // no idle goroutines for a huge worker count
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				if err := fn(ctx, i); err != nil {
					cancel(err)
					return
				}
				done.Add(1)
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	ReportUntil(finished, &done, p)
	return context.Cause(ctx)
}

// ReportUntil sets progress from one goroutine until finished closes.
func ReportUntil(finished <-chan struct{}, done *atomic.Int64, p progress.Reporter) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-finished:
			p.Set(int(done.Load()))
			return
		case <-tick.C:
			p.Set(int(done.Load()))
		}
	}
}
