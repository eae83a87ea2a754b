// Package parallel runs per-item work of long builds on a bounded number
// of goroutines, with progress and first-error cancellation.
package parallel

import (
	"context"
	"runtime"
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

type workersKey struct{}

// WithWorkers bounds at n (at least 1) the goroutines that parallel work
// under the returned context runs at once: a live commit that holds one
// place at the writers' CPU gate runs on one core, leaving the others to
// queries.
func WithWorkers(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, workersKey{}, max(1, n))
}

// Workers is how many goroutines parallel work under ctx may run at once:
// GOMAXPROCS, or fewer where WithWorkers bounded ctx.
func Workers(ctx context.Context) int {
	n := runtime.GOMAXPROCS(0)
	if w, ok := ctx.Value(workersKey{}).(int); ok {
		n = min(n, w)
	}
	return n
}

type backgroundKey struct{}

// Background marks work under the returned context as background: at each
// Yield it gives its core to goroutines waiting for one. Go preempts a
// running goroutine only after 10 ms, so without this a query that became
// ready during a long commit waited up to that long for the core.
func Background(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundKey{}, true)
}

// Yield lets waiting goroutines run when ctx is Background; long loops call
// it every ~10–100 µs of work (a yield with no one waiting costs well under
// a microsecond). On an idle thread (OnIdleThread) it does nothing: the
// kernel already gives the core to any other thread that wants it, and a
// goroutine locked to its thread that yields hands its P to another
// thread and back, two wake-ups each time.
func Yield(ctx context.Context) {
	if ctx.Value(backgroundKey{}) != nil && !onIdleThread() {
		runtime.Gosched()
	}
}

// onIdleThread reports whether the calling goroutine runs on a thread
// OnIdleThread made idle (only its own goroutine runs there).
func onIdleThread() bool { return threadPolicy() == schedIdle }

// Run runs fn, on an idle thread (OnIdleThread) when idle is set.
func Run(idle bool, fn func()) {
	if idle {
		OnIdleThread(fn)
	} else {
		fn()
	}
}

// copyChunk is how many elements Copy moves between two yields: a few
// hundred kB, tens of µs.
const copyChunk = 1 << 16

// Copy is copy(dst, src) in chunks, yielding between them (Yield): one
// copy of a large array is a memmove the scheduler cannot preempt, which
// for the 10⁸ bytes of a large index's vectors holds a core for tens of
// ms.
func Copy[S ~[]E, E any](ctx context.Context, dst, src S) int {
	n := min(len(dst), len(src))
	for at := 0; at < n; at += copyChunk {
		copy(dst[at:n], src[at:min(n, at+copyChunk)])
		Yield(ctx)
	}
	return n
}

// Grow is slices.Grow for background work: s with room for n more
// elements, and a quarter more besides for later appends, its elements
// copied by Copy when it must move.
func Grow[S ~[]E, E any](ctx context.Context, s S, n int) S {
	if n <= cap(s)-len(s) {
		return s
	}
	c := len(s) + n
	out := make(S, len(s), c+c/4+16)
	Copy(ctx, out, s)
	return out
}
