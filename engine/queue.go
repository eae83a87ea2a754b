package engine

// Queuer is an optional capability of a device backend: Queue returns a
// view of it whose ops, transfers and Sync run in order on a queue of
// their own (a CUDA stream), unordered with other queues' work, so the
// batches that two goroutines submit at once (two scheduler workers)
// overlap on the device instead of waiting in one line.
//
// The view shares the backend's device, kernels and everything allocated
// or bound through the backend itself, which every queue may read; work
// submitted through the backend itself is ordered with every queue's.
// Buffers allocated through a view belong to its queue: use them through
// that view (or the backend itself), not another view, and free them
// before calling release. release returns the queue for reuse; it does
// not wait for the queue's work (a Download does). Queue and release are
// safe for concurrent use; a view, like any backend, is safe for
// concurrent use, though its work runs in one line.
type Queuer interface {
	Queue() (view Backend, release func(), err error)
	// Queues is how many queues the views spread over.
	Queues() int
}

// QueueWorkers is how many scheduler workers keep b busy: its queue
// count for a Queuer, else 1 (a host backend's ops already use every
// core). A nil b is 1.
func QueueWorkers(b Backend) int {
	if q, ok := b.(Queuer); ok {
		return max(1, q.Queues())
	}
	return 1
}

// OnQueue returns a view of b on a queue of its own when b is a Queuer,
// else b itself (a host backend runs each caller's ops on the caller's
// goroutine already); release the view with the returned function once
// the buffers allocated through it are freed.
func OnQueue(b Backend) (Backend, func(), error) {
	if q, ok := b.(Queuer); ok {
		return q.Queue()
	}
	return b, func() {}, nil
}

// Root is the backend a queue view belongs to (a view says so with a
// Root method), else b itself: a cache of bound buffers keys on it, as
// every view reads what its backend bound.
func Root(b Backend) Backend {
	if r, ok := b.(interface{ Root() Backend }); ok {
		return r.Root()
	}
	return b
}
