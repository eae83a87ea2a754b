package kernels

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSpinPoolRunsEveryPartOnce runs sections of 1–5 parts, some after the
// workers have parked, and checks each part ran exactly once and had
// finished when run returned.
func TestSpinPoolRunsEveryPartOnce(t *testing.T) {
	var p spinPool
	for round := 0; round < 50; round++ {
		parts := 1 + round%5
		if round%10 == 9 {
			time.Sleep(2 * spinFor) // the workers park; post must wake them
		}
		var counts [5]atomic.Int32
		p.run(parts, func(i int) { counts[i].Add(1) })
		for i := 0; i < 5; i++ {
			want := int32(0)
			if i < parts {
				want = 1
			}
			if got := counts[i].Load(); got != want {
				t.Fatalf("round %d, %d parts: part %d ran %d times", round, parts, i, got)
			}
		}
	}
}

// TestSpinPoolConcurrentAndNested runs sections from several goroutines at
// once, each part starting a section of its own: callers that find the pool
// busy run on goroutines, so nothing deadlocks and every part runs.
func TestSpinPoolConcurrentAndNested(t *testing.T) {
	var p spinPool
	var total atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 20; r++ {
				p.run(3, func(int) {
					p.run(2, func(int) { total.Add(1) })
				})
			}
		}()
	}
	wg.Wait()
	if got := total.Load(); got != 8*20*3*2 {
		t.Fatalf("%d inner parts ran, want %d", got, 8*20*3*2)
	}
}

// TestSpinPoolSurvivesPanic checks that a panic in the caller's part
// reaches the caller only after the workers' parts have finished, and that
// the pool runs the next section normally.
func TestSpinPoolSurvivesPanic(t *testing.T) {
	var p spinPool
	var slow atomic.Bool
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic of part 0 was lost")
			}
			if !slow.Load() {
				t.Fatal("run returned before the worker's part finished")
			}
		}()
		p.run(2, func(i int) {
			if i == 0 {
				panic("part 0")
			}
			time.Sleep(10 * time.Millisecond)
			slow.Store(true)
		})
	}()
	var n atomic.Int32
	p.run(2, func(int) { n.Add(1) })
	if n.Load() != 2 {
		t.Fatalf("after the panic, %d of 2 parts ran", n.Load())
	}
}

// TestSpinPoolWakesParkingWorkers posts sections just as the workers give up
// polling and park, with jitter, many times: a lost wake-up hangs the test.
func TestSpinPoolWakesParkingWorkers(t *testing.T) {
	var p spinPool
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 200; i++ {
		time.Sleep(spinFor - 50*time.Microsecond + time.Duration(rng.IntN(100))*time.Microsecond)
		var n atomic.Int32
		p.run(3, func(int) { n.Add(1) })
		if n.Load() != 3 {
			t.Fatalf("section %d: %d of 3 parts ran", i, n.Load())
		}
	}
}

// TestSpinPoolSurvivesGoexit checks that a worker's part that ends by
// runtime.Goexit still counts as done, and that the pool replaces that
// worker.
func TestSpinPoolSurvivesGoexit(t *testing.T) {
	var p spinPool
	p.run(2, func(i int) {
		if i == 1 {
			runtime.Goexit()
		}
	})
	var n atomic.Int32
	p.run(2, func(int) { n.Add(1) })
	if n.Load() != 2 {
		t.Fatalf("after a Goexit, %d of 2 parts ran", n.Load())
	}
}

// TestSpinPoolAsideParksWorkers: while a section runs aside, the pool's
// workers park (they would take a core from its threads) though their
// polling time has not run out, and when it returns they are woken to poll
// again, before any section posts to them. The pool polls for a minute,
// so neither happens by timeout.
func TestSpinPoolAsideParksWorkers(t *testing.T) {
	p := spinPool{spin: time.Minute}
	defer p.quiet.Add(1) // parks the workers for good when the test ends
	for round := 0; round < 20; round++ {
		var n atomic.Int32
		p.run(3, func(int) { n.Add(1) })
		p.aside(func() { waitParked(t, &p, true) })
		waitParked(t, &p, false)
		p.run(3, func(int) { n.Add(1) })
		if n.Load() != 6 {
			t.Fatalf("round %d: %d of 6 parts ran", round, n.Load())
		}
	}
}

// waitParked waits until every worker of p is parked (or every one is
// not), and fails the test after 10 s.
func waitParked(t *testing.T, p *spinPool, parked bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, w := range *p.listed.Load() {
		for w.parked.Load() != parked {
			if time.Now().After(deadline) {
				t.Fatalf("a worker is parked=%v, want %v", !parked, parked)
			}
			runtime.Gosched()
		}
	}
}
