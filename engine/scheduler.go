package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// BatchFunc runs one batch: it returns one output per input, in order, or
// an error that fails every item of the batch. ctx is the scheduler's, not
// any one request's (a batch mixes requests).
type BatchFunc[In, Out any] func(ctx context.Context, items []In) ([]Out, error)

// Result is one item's outcome, delivered on its request's channel. Index is
// the item's position in the slice given to Submit.
type Result[Out any] struct {
	Index int
	Value Out
	Err   error
}

// Scheduler errors.
var (
	ErrClosed    = errors.New("engine: scheduler closed")
	ErrQueueFull = errors.New("engine: scheduler queue full")
)

// SchedulerOptions configures a Scheduler; zero values take the defaults.
type SchedulerOptions struct {
	MaxBatch  int           // items per batch (default 64)
	MaxWait   time.Duration // extra time a partial batch waits for more items (default 0: none; batches still grow while workers are busy)
	QueueSize int           // items waiting at most (default 4096)
	FailFast  bool          // a full queue fails Submit with ErrQueueFull instead of blocking
	Workers   int           // batches executing at once (default 1)
	Logger    *slog.Logger
}

func (o *SchedulerOptions) validate() error {
	var errs []error
	if o.MaxBatch < 0 || o.QueueSize < 0 || o.Workers < 0 || o.MaxWait < 0 {
		errs = append(errs, fmt.Errorf("engine: scheduler options must not be negative: %+v", *o))
	}
	o.MaxBatch = defaultInt(o.MaxBatch, 64)
	o.QueueSize = defaultInt(o.QueueSize, 4096)
	o.Workers = defaultInt(o.Workers, 1)
	if o.QueueSize < o.MaxBatch {
		errs = append(errs, fmt.Errorf("engine: queue size %d is smaller than a batch (%d)", o.QueueSize, o.MaxBatch))
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return errors.Join(errs...)
}

func defaultInt(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// Scheduler batches items that many goroutines submit (one retrieval loop
// per query) into calls of one BatchFunc, by maximum batch size and maximum
// wait, and streams each item's result to its request's channel as soon as
// the batch holding it completes.
//
// Concurrency contract: Submit, Do and Metrics are safe to call from any
// number of goroutines; Close may be called once, concurrently with them.
// A request whose context is cancelled has its queued items dropped and its
// in-flight results discarded; its channel still receives one Result per
// item (with the context's error) and is then closed, so receivers never
// hang and nothing leaks.
type Scheduler[In, Out any] struct {
	fn       BatchFunc[In, Out]
	opt      SchedulerOptions
	queue    chan *item[In, Out]
	queued   atomic.Int64
	mu       sync.RWMutex // guards closed against sends on a closed queue
	closed   bool
	base     context.Context
	cancel   context.CancelFunc
	slots    chan struct{}
	inflight sync.WaitGroup
	done     chan struct{}
	stats    stats
}

type request[Out any] struct {
	ctx       context.Context
	out       chan Result[Out]
	remaining atomic.Int64
}

type item[In, Out any] struct {
	req *request[Out]
	idx int
	in  In
	enq time.Time
}

// NewScheduler starts a scheduler running fn.
func NewScheduler[In, Out any](fn BatchFunc[In, Out], opt SchedulerOptions) (*Scheduler[In, Out], error) {
	if fn == nil {
		return nil, errors.New("engine: nil batch function")
	}
	if err := opt.validate(); err != nil {
		return nil, err
	}
	s := &Scheduler[In, Out]{fn: fn, opt: opt, queue: make(chan *item[In, Out], opt.QueueSize),
		slots: make(chan struct{}, opt.Workers), done: make(chan struct{})}
	s.base, s.cancel = context.WithCancel(context.Background())
	s.stats.init(opt.MaxBatch)
	go s.dispatch()
	return s, nil
}

// Submit queues items and returns the channel their results arrive on (in
// completion order, one per item, then closed). With FailFast, a queue
// without room for all items fails the whole call with ErrQueueFull and
// queues nothing; otherwise Submit blocks until there is room or ctx ends.
func (s *Scheduler[In, Out]) Submit(ctx context.Context, items []In) (<-chan Result[Out], error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	if s.opt.FailFast && !s.reserve(len(items)) {
		s.stats.rejected(len(items))
		return nil, ErrQueueFull
	}
	req := &request[Out]{ctx: ctx, out: make(chan Result[Out], len(items))}
	req.remaining.Store(int64(len(items)))
	if len(items) == 0 {
		close(req.out)
	}
	for i, x := range items {
		it := &item[In, Out]{req: req, idx: i, in: x, enq: time.Now()}
		if s.opt.FailFast {
			s.queue <- it // room was reserved
			continue
		}
		if err := s.enqueue(ctx, it); err != nil {
			for j := i; j < len(items); j++ {
				req.resolve(Result[Out]{Index: j, Err: err})
			}
			break
		}
	}
	return req.out, nil
}

// reserve claims room for n items in the queue.
func (s *Scheduler[In, Out]) reserve(n int) bool {
	for {
		q := s.queued.Load()
		if q+int64(n) > int64(s.opt.QueueSize) {
			return false
		}
		if s.queued.CompareAndSwap(q, q+int64(n)) {
			return true
		}
	}
}

func (s *Scheduler[In, Out]) enqueue(ctx context.Context, it *item[In, Out]) error {
	select {
	case s.queue <- it:
		s.queued.Add(1)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// resolve delivers one result and closes the channel after the last. The
// channel has room for every item, so this never blocks.
func (r *request[Out]) resolve(res Result[Out]) {
	r.out <- res
	if r.remaining.Add(-1) == 0 {
		close(r.out)
	}
}

// Do submits items and waits for all results, returned in input order; the
// first error (by index) is returned with them.
func (s *Scheduler[In, Out]) Do(ctx context.Context, items []In) ([]Out, error) {
	ch, err := s.Submit(ctx, items)
	if err != nil {
		return nil, err
	}
	out := make([]Out, len(items))
	errs := make([]error, len(items))
	for r := range ch {
		out[r.Index], errs[r.Index] = r.Value, r.Err
	}
	for i, e := range errs {
		if e != nil {
			return out, fmt.Errorf("item %d: %w", i, e)
		}
	}
	return out, nil
}

// Close stops accepting work, runs what is queued, and waits for in-flight
// batches. If ctx ends first, the batch context is cancelled and every item
// not yet finished fails with ErrClosed; Close then returns ctx's error
// after all goroutines have exited.
func (s *Scheduler[In, Out]) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	close(s.queue)
	s.mu.Unlock()
	select {
	case <-s.done:
		s.cancel()
		return nil
	case <-ctx.Done():
		s.cancel() // batch functions see cancellation; the dispatcher fails the rest
		<-s.done
		return ctx.Err()
	}
}
