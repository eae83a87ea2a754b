package engine_test

import (
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
)

// queued is a backend with queues whose views are the backend itself.
type queued struct {
	engine.Backend
	views, released int
}

func (q *queued) Queue() (engine.Backend, func(), error) {
	q.views++
	return q.Backend, func() { q.released++ }, nil
}

func (q *queued) Queues() int { return 3 }

func TestOnQueue(t *testing.T) {
	be := cpu.New()
	v, release, err := engine.OnQueue(be)
	if err != nil || v != engine.Backend(be) {
		t.Fatalf("a backend without queues: OnQueue = %v, %v; want the backend itself", v, err)
	}
	release()
	q := &queued{Backend: be}
	if _, release, err = engine.OnQueue(q); err != nil || q.views != 1 {
		t.Fatalf("a Queuer: %d views, %v", q.views, err)
	}
	release()
	if q.released != 1 {
		t.Fatalf("release did not reach the Queuer")
	}
	if n := engine.QueueWorkers(q); n != 3 {
		t.Fatalf("QueueWorkers = %d, want 3", n)
	}
	if n := engine.QueueWorkers(be); n != 1 {
		t.Fatalf("QueueWorkers(cpu) = %d, want 1", n)
	}
	if engine.Root(be) != engine.Backend(be) || engine.Root(q) != engine.Backend(q) {
		t.Fatal("Root of a backend without a Root method is itself")
	}
	if n := engine.QueueWorkers(nil); n != 1 {
		t.Fatalf("QueueWorkers(nil) = %d, want 1", n)
	}
}
