package kernels

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// spinFor is how long a pool worker polls for the next parallel section
// before it parks. On this project's 2-core VM a parked goroutine took
// 130–165 µs to start on the idle core after being woken, and the 48
// parallel sections of a MiniLM-L6 forward (batch 1) waited 1.3–2.1 ms in
// all for their second halves to start; with workers that poll, 0.2 ms.
// Some gaps between sections are longer than 200 µs (0.42 ms of waiting at
// that setting); 1 ms waited no less than 500 µs. ONNX Runtime's pool spins
// for the same reason. The poll yields the P every few microseconds, so
// runnable goroutines are not held up by it.
const spinFor = 500 * time.Microsecond

// sections is the process's pool of parallel-section workers: one fewer
// than GOMAXPROCS, started on first use. One section runs on it at a time;
// a caller that finds it busy (another goroutine's section, or a section
// started inside a section) runs its parts on new goroutines instead, so
// the pool never deadlocks and never serialises callers.
var sections spinPool

type spinPool struct {
	mu      sync.Mutex // held for a section; TryLock decides pool or goroutines
	workers []*spinWorker
	// listed is a copy of workers, replaced under mu when it changes, for
	// wakeAll, which must not wait for a section.
	listed atomic.Pointer[[]*spinWorker]
	// quiet counts the sections running on threads of their own (see
	// aside): while it is above zero, workers park instead of polling.
	quiet atomic.Int32
	// spin is how long workers poll before they park; 0 means spinFor.
	spin time.Duration
}

// aside runs fn, a section that runs on threads of its own (C threads),
// with the pool's workers parked rather than polling beside it: on a
// machine with as many cores as the section has threads, a polling worker
// takes a core from the section's threads, and it holds a P, so the
// runtime also takes the caller's P back and wakes a thread to look for
// work. Workers are woken when fn returns, to poll for the next section.
func (p *spinPool) aside(fn func()) {
	p.quiet.Add(1)
	defer func() {
		if p.quiet.Add(-1) == 0 {
			p.wakeAll()
		}
	}()
	fn()
}

// wakeAll wakes the parked workers, to poll again for the next section.
// A worker about to park when quiet falls to zero sees it and does not
// (loop), so none is missed.
func (p *spinPool) wakeAll() {
	ws := p.listed.Load()
	if ws == nil {
		return
	}
	for _, w := range *ws {
		if w.parked.Load() {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
}

// spinWorker runs the parts handed to it: post sets fn and bumps seq; the
// worker runs fn and stores seq into done.
type spinWorker struct {
	pool   *spinPool
	fn     func()
	seq    atomic.Uint64
	done   atomic.Uint64
	parked atomic.Bool
	gone   atomic.Bool   // its part ended by runtime.Goexit (t.FailNow in a test): replaced at the next run
	wake   chan struct{} // capacity 1: a wake-up is never lost, a stale one only re-polls
}

// run calls part(i) for i in [0, parts), part 0 on the calling goroutine,
// and returns when every part has returned.
func (p *spinPool) run(parts int, part func(i int)) {
	if parts <= 1 {
		if parts == 1 {
			part(0)
		}
		return
	}
	if !p.mu.TryLock() {
		runOnGoroutines(parts, part)
		return
	}
	defer p.mu.Unlock()
	var started []*spinWorker
	for i := range p.workers {
		if p.workers[i].gone.Load() {
			p.workers[i] = newSpinWorker(p)
			started = append(started, p.workers[i])
		}
	}
	for len(p.workers) < parts-1 {
		p.workers = append(p.workers, newSpinWorker(p))
		started = append(started, p.workers[len(p.workers)-1])
	}
	if started != nil {
		// listed first: a new worker may park at once (an aside running
		// elsewhere), and wakeAll must see it
		ws := slices.Clone(p.workers)
		p.listed.Store(&ws)
		for _, w := range started {
			go w.loop()
		}
	}
	for i := 1; i < parts; i++ {
		p.workers[i-1].post(func() { part(i) })
	}
	// The workers are waited for even when part 0 panics: the next section
	// must not post to a worker still running this one.
	defer func() {
		for i := 1; i < parts; i++ {
			p.workers[i-1].wait()
		}
	}()
	part(0)
}

// newSpinWorker makes a worker of p; run starts its loop.
func newSpinWorker(p *spinPool) *spinWorker {
	return &spinWorker{pool: p, wake: make(chan struct{}, 1)}
}

// runOnGoroutines is run without the pool.
func runOnGoroutines(parts int, part func(i int)) {
	var wg sync.WaitGroup
	for i := 1; i < parts; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); part(i) }()
	}
	part(0)
	wg.Wait()
}

// post hands the worker fn; it must have finished its previous part.
func (w *spinWorker) post(fn func()) {
	w.fn = fn
	w.seq.Add(1) // publishes fn (atomics are sequentially consistent)
	if w.parked.Load() {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// wait returns once the worker has run the part posted last. The parts of
// a section are of equal size, so the wait is short; it yields the P while
// it polls.
func (w *spinWorker) wait() {
	for !poll(func() bool { return w.done.Load() == w.seq.Load() }) {
		runtime.Gosched()
	}
}

// pollTurns is how many times poll tests its condition between yields: a
// yield takes the scheduler's global lock, and a worker and a caller that
// yielded on every test spent 6 % of an XLM-R forward in the scheduler.
const pollTurns = 1000

// poll tests cond up to pollTurns times (a few microseconds) and reports
// whether it came true.
func poll(cond func() bool) bool {
	for i := 0; i < pollTurns; i++ {
		if cond() {
			return true
		}
	}
	return false
}

// loop polls for the next part for spinFor, then parks until post wakes it.
// A worker checks seq again after it marks itself parked, and post checks
// parked after it bumps seq, so one of the two always sees the other.
func (w *spinWorker) loop() {
	var last uint64
	for {
		start := time.Now()
		for !poll(func() bool { return w.seq.Load() != last }) {
			if w.polls(start) {
				runtime.Gosched()
				continue
			}
			w.parked.Store(true)
			// Tested again after parked is set: aside lowers quiet before
			// wakeAll reads parked, so a worker that missed the wake-up
			// sees quiet at zero here and polls on.
			if w.seq.Load() == last && !w.polls(start) {
				<-w.wake
			}
			w.parked.Store(false)
			start = time.Now() // woken, or an aside ended: poll afresh
		}
		last = w.seq.Load()
		if !w.runPart(last) {
			return
		}
	}
}

// polls reports whether a worker that began polling at start should go on
// polling rather than park.
func (w *spinWorker) polls(start time.Time) bool {
	spin := w.pool.spin
	if spin == 0 {
		spin = spinFor
	}
	return time.Since(start) < spin && w.pool.quiet.Load() == 0
}

// runPart runs the posted part and marks it done however it ends, so the
// caller's wait returns even when the part calls runtime.Goexit; such a
// worker is marked gone and leaves (a panic still ends the process, as in
// any goroutine).
func (w *spinWorker) runPart(seq uint64) (returned bool) {
	defer func() {
		w.fn = nil
		w.gone.Store(!returned)
		w.done.Store(seq)
	}()
	w.fn()
	return true
}
