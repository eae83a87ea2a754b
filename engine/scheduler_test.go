package engine

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

func double(_ context.Context, xs []int) ([]int, error) {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = 2 * x
	}
	return out, nil
}

// noLeaks waits (boundedly) for the goroutine count to return to base.
func noLeaks(t *testing.T, base int) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if runtime.NumGoroutine() <= base {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Errorf("goroutines: %d running, %d before", runtime.NumGoroutine(), base)
}

func TestSchedulerBatchesConcurrentProducers(t *testing.T) {
	base := runtime.NumGoroutine()
	s, err := NewScheduler(double, SchedulerOptions{MaxBatch: 16, MaxWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for p := 0; p < 64; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 10; r++ {
				in := []int{p, r, p * r}
				out, err := s.Do(context.Background(), in)
				if err != nil {
					t.Error(err)
					return
				}
				for i := range in {
					if out[i] != 2*in[i] {
						t.Errorf("producer %d: got %v for %v", p, out, in)
					}
				}
			}
		}()
	}
	wg.Wait()
	m := s.Metrics()
	if m.Items != 64*10*3 || m.Batches == 0 || m.MeanBatch() > 16 {
		t.Errorf("metrics: %+v", m)
	}
	var hist uint64
	for _, c := range m.BatchHist {
		hist += c
	}
	if hist != m.Batches {
		t.Errorf("histogram counts %d batches, metrics %d", hist, m.Batches)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit(context.Background(), []int{1}); !errors.Is(err, ErrClosed) {
		t.Errorf("submit after close: %v", err)
	}
	noLeaks(t, base)
}

// gated returns a batch function that blocks until gate is closed and
// reports each batch's start on started.
func gated(gate chan struct{}, started chan int) BatchFunc[int, int] {
	return func(ctx context.Context, xs []int) ([]int, error) {
		started <- len(xs)
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return double(ctx, xs)
	}
}

func TestSchedulerCancellation(t *testing.T) {
	base := runtime.NumGoroutine()
	gate, started := make(chan struct{}), make(chan int, 16)
	s, _ := NewScheduler(gated(gate, started), SchedulerOptions{MaxBatch: 2, MaxWait: time.Microsecond})
	ctx, cancel := context.WithCancel(context.Background())
	inflight, _ := s.Submit(ctx, []int{1, 2}) // becomes the running batch
	<-started
	queued, _ := s.Submit(ctx, []int{3, 4, 5}) // waits in the queue
	other, _ := s.Submit(context.Background(), []int{6})
	cancel()
	close(gate)
	for _, ch := range []<-chan Result[int]{inflight, queued} {
		n := 0
		for r := range ch {
			n++
			if !errors.Is(r.Err, context.Canceled) {
				t.Errorf("cancelled request got %+v", r)
			}
		}
		if n == 0 {
			t.Error("cancelled request got no results")
		}
	}
	r := <-other
	if r.Err != nil || r.Value != 12 {
		t.Errorf("uncancelled request: %+v", r)
	}
	if m := s.Metrics(); m.Dropped < 3 {
		t.Errorf("dropped %d queued items, want ≥ 3", m.Dropped)
	}
	s.Close(context.Background())
	noLeaks(t, base)
}

func TestSchedulerShutdownCompletesOrFails(t *testing.T) {
	base := runtime.NumGoroutine()
	gate, started := make(chan struct{}), make(chan int, 16)
	s, _ := NewScheduler(gated(gate, started), SchedulerOptions{MaxBatch: 4, MaxWait: time.Microsecond})
	first, _ := s.Submit(context.Background(), []int{1})
	<-started
	rest, _ := s.Submit(context.Background(), []int{2, 3})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // shut down without waiting: every pending item must fail
	if err := s.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("close: %v", err)
	}
	for _, ch := range []<-chan Result[int]{first, rest} {
		for r := range ch {
			if r.Err == nil {
				t.Errorf("item completed after a forced shutdown: %+v", r)
			}
		}
	}
	noLeaks(t, base)

	// a graceful close completes what is queued
	s2, _ := NewScheduler(double, SchedulerOptions{})
	ch, _ := s2.Submit(context.Background(), []int{1, 2, 3})
	if err := s2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	sum := 0
	for r := range ch {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		sum += r.Value
	}
	if sum != 12 {
		t.Errorf("graceful close: sum %d, want 12", sum)
	}
	noLeaks(t, base)
}

func TestSchedulerBackPressure(t *testing.T) {
	gate, started := make(chan struct{}), make(chan int, 16)
	s, _ := NewScheduler(gated(gate, started), SchedulerOptions{MaxBatch: 1, QueueSize: 2, FailFast: true, MaxWait: time.Microsecond})
	a, err := s.Submit(context.Background(), []int{1})
	if err != nil {
		t.Fatal(err)
	}
	<-started // item 1 running; the dispatcher waits for a worker slot with the next item
	if _, err := s.Submit(context.Background(), []int{2, 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit(context.Background(), []int{4, 5, 6}); !errors.Is(err, ErrQueueFull) {
		t.Errorf("over-full queue: %v", err)
	}
	close(gate)
	<-a
	s.Close(context.Background())
	if m := s.Metrics(); m.Rejected != 3 {
		t.Errorf("rejected %d, want 3", m.Rejected)
	}

	// blocking mode: Submit waits for room and honours its context
	gate2, started2 := make(chan struct{}), make(chan int, 16)
	s2, _ := NewScheduler(gated(gate2, started2), SchedulerOptions{MaxBatch: 1, QueueSize: 1, MaxWait: time.Microsecond})
	s2.Submit(context.Background(), []int{1})
	<-started2
	s2.Submit(context.Background(), []int{2}) // taken by the dispatcher, waiting for a slot
	s2.Submit(context.Background(), []int{3}) // fills the queue
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	ch, err := s2.Submit(ctx, []int{4})
	if err != nil {
		t.Fatal(err)
	}
	if r := <-ch; !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Errorf("blocked submit: %+v", r)
	}
	close(gate2)
	s2.Close(context.Background())
}

func TestSchedulerBatchErrors(t *testing.T) {
	panicky := func(_ context.Context, xs []int) ([]int, error) {
		if xs[0] < 0 {
			panic("negative")
		}
		return xs[:len(xs)-1], nil // wrong length
	}
	s, _ := NewScheduler(panicky, SchedulerOptions{MaxBatch: 1})
	defer s.Close(context.Background())
	if _, err := s.Do(context.Background(), []int{-1}); err == nil {
		t.Error("panic not reported")
	}
	if _, err := s.Do(context.Background(), []int{1}); err == nil {
		t.Error("short output not reported")
	}
	if _, err := NewScheduler[int, int](nil, SchedulerOptions{}); err == nil {
		t.Error("nil function accepted")
	}
	if _, err := NewScheduler(double, SchedulerOptions{MaxBatch: 10, QueueSize: 5}); err == nil {
		t.Error("queue smaller than a batch accepted")
	}
}
