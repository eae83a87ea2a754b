package engine

import "time"

// dispatch assembles batches from the queue until it is closed and
// drained, then waits for in-flight batches. It takes a worker slot before
// assembling a batch, so while every worker is busy, arriving items gather
// in the queue and the next batch takes them all: batches grow with load,
// and a lone request never waits for company.
func (s *Scheduler[In, Out]) dispatch() {
	defer close(s.done)
	defer s.inflight.Wait()
	for {
		first, ok := <-s.queue
		if !ok {
			return
		}
		s.slots <- struct{}{}
		batch := s.collect(first)
		if live := s.dropCancelled(batch); len(live) > 0 {
			s.launch(live)
		} else {
			<-s.slots
		}
	}
}

// collect gathers up to MaxBatch items: those already queued, then, if
// MaxWait > 0, those arriving within MaxWait of the first.
func (s *Scheduler[In, Out]) collect(first *item[In, Out]) []*item[In, Out] {
	s.queued.Add(-1)
	batch := s.gather([]*item[In, Out]{first}, nil)
	if s.opt.MaxWait <= 0 || len(batch) == s.opt.MaxBatch {
		return batch
	}
	timer := time.NewTimer(s.opt.MaxWait)
	defer timer.Stop()
	return s.gather(batch, timer.C)
}

// gather appends queued items until the batch is full, the queue is closed,
// and then either the queue is momentarily empty (deadline nil) or the
// deadline fires.
func (s *Scheduler[In, Out]) gather(batch []*item[In, Out], deadline <-chan time.Time) []*item[In, Out] {
	for len(batch) < s.opt.MaxBatch {
		var it *item[In, Out]
		var ok bool
		if deadline == nil {
			select {
			case it, ok = <-s.queue:
			default:
				return batch
			}
		} else {
			select {
			case it, ok = <-s.queue:
			case <-deadline:
				return batch
			}
		}
		if !ok {
			return batch
		}
		s.queued.Add(-1)
		batch = append(batch, it)
	}
	return batch
}

// dropCancelled resolves items whose request is cancelled (or whose
// scheduler is shutting down) and returns the rest.
func (s *Scheduler[In, Out]) dropCancelled(batch []*item[In, Out]) []*item[In, Out] {
	live := batch[:0]
	for _, it := range batch {
		switch {
		case it.req.ctx.Err() != nil:
			s.stats.dropped(1)
			it.req.resolve(Result[Out]{Index: it.idx, Err: it.req.ctx.Err()})
		case s.base.Err() != nil:
			s.stats.dropped(1)
			it.req.resolve(Result[Out]{Index: it.idx, Err: ErrClosed})
		default:
			live = append(live, it)
		}
	}
	return live
}

// launch runs a batch on the worker slot dispatch took for it.
func (s *Scheduler[In, Out]) launch(batch []*item[In, Out]) {
	s.inflight.Add(1)
	go func() {
		defer func() { <-s.slots; s.inflight.Done() }()
		s.run(batch)
	}()
}

func (s *Scheduler[In, Out]) run(batch []*item[In, Out]) {
	start := time.Now()
	ins := make([]In, len(batch))
	for i, it := range batch {
		ins[i] = it.in
		s.stats.waited(start.Sub(it.enq))
	}
	outs, err := s.call(ins)
	s.stats.batch(len(batch), time.Since(start))
	if err == nil && len(outs) != len(ins) {
		err = errBatchLen(len(outs), len(ins))
	}
	for i, it := range batch {
		res := Result[Out]{Index: it.idx, Err: err}
		if err == nil {
			res.Value = outs[i]
		}
		if e := it.req.ctx.Err(); e != nil { // cancelled while in flight: discard
			res = Result[Out]{Index: it.idx, Err: e}
		}
		it.req.resolve(res)
	}
}

// call runs the batch function, turning a panic into an error so one bad
// batch cannot take down the process or strand its requests.
func (s *Scheduler[In, Out]) call(ins []In) (outs []Out, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errPanic(r)
			s.opt.Logger.Error("batch function panicked", "panic", r)
		}
	}()
	return s.fn(s.base, ins)
}
