package cuda

import (
	"errors"
	"sync"
	"testing"
)

func TestQueuesLeastUsed(t *testing.T) {
	q, err := NewQueues(2)
	if err != nil {
		t.Fatal(err)
	}
	created := 0
	create := func() error { created++; return nil }
	acquire := func(want int) {
		t.Helper()
		if id, err := q.Acquire(create); err != nil || id != want {
			t.Fatalf("Acquire = %d, %v; want %d", id, err, want)
		}
	}
	acquire(1)
	acquire(2) // queue 1 is busy: a second stream
	acquire(1) // at the maximum: the least used, shared
	q.Release(2)
	acquire(2) // now free
	q.Release(1)
	q.Release(1)
	acquire(1)
	if created != 2 || q.Created() != 2 {
		t.Fatalf("created %d streams (set says %d), want 2", created, q.Created())
	}
	q.Release(7) // unknown ids are ignored
	q.Release(0)
}

func TestQueuesReuseBeforeCreating(t *testing.T) {
	q, _ := NewQueues(4)
	created := 0
	create := func() error { created++; return nil }
	for range 3 {
		id, _ := q.Acquire(create)
		q.Release(id)
	}
	if created != 1 {
		t.Fatalf("a released queue was not reused: %d streams made", created)
	}
}

func TestQueuesCreateFailure(t *testing.T) {
	q, _ := NewQueues(3)
	boom := errors.New("no stream")
	if _, err := q.Acquire(func() error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("first Acquire with a failing create: %v", err)
	}
	id, err := q.Acquire(func() error { return nil })
	if err != nil || id != 1 {
		t.Fatalf("Acquire = %d, %v", id, err)
	}
	// With one queue made, a failure to make another shares it.
	if id2, err := q.Acquire(func() error { return boom }); err != nil || id2 != 1 {
		t.Fatalf("Acquire after a create failure = %d, %v; want to share queue 1", id2, err)
	}
	if _, err := NewQueues(0); err == nil {
		t.Fatal("NewQueues(0): no error")
	}
}

func TestQueuesConcurrent(t *testing.T) { // for -race
	q, _ := NewQueues(3)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				id, err := q.Acquire(func() error { return nil })
				if err != nil || id < 1 || id > 3 {
					t.Errorf("Acquire = %d, %v", id, err)
					return
				}
				q.Release(id)
			}
		}()
	}
	wg.Wait()
	if q.Created() > 3 {
		t.Fatalf("%d queues made, max 3", q.Created())
	}
}
