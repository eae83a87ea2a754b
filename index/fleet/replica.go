package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gleaner-rag/gleaner/index/live"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrBehind marks a replica whose next batch the log no longer holds
// (trimmed behind a snapshot): it must restore a snapshot.
var ErrBehind = errors.New("fleet: the replica is behind the log")

// FollowOptions configure a replica.
type FollowOptions struct {
	Logger *slog.Logger // required
	// MaxBatch bounds how many batches one commit takes (1 to 65536).
	MaxBatch int
	// Keep is how many refusals of recent batches Wait remembers (> 0).
	Keep int
	// Retry is the pause before following again after a failure (> 0).
	Retry time.Duration
}

// DefaultFollowOptions are the options Follow expects unless told
// otherwise.
func DefaultFollowOptions(log *slog.Logger) FollowOptions {
	return FollowOptions{Logger: log, MaxBatch: 1024, Keep: 1 << 16, Retry: time.Second}
}

func (o *FollowOptions) validate() error {
	switch {
	case o.Logger == nil:
		return fmt.Errorf("fleet: FollowOptions.Logger is required")
	case o.MaxBatch < 1 || o.MaxBatch > 1<<16:
		return fmt.Errorf("fleet: FollowOptions.MaxBatch %d: want 1 to 65536", o.MaxBatch)
	case o.Keep < 1:
		return fmt.Errorf("fleet: FollowOptions.Keep %d: want > 0", o.Keep)
	case o.Retry <= 0:
		return fmt.Errorf("fleet: FollowOptions.Retry %v: want > 0", o.Retry)
	}
	return nil
}

// Replica applies a log to a live index, in order, from the batch after
// the last the index took. Its methods are safe for concurrent use. Only
// the replica may commit to the writer while it follows: a batch
// committed beside it would be on this replica alone.
type Replica struct {
	l *Log
	w *live.Writer
	o FollowOptions

	mu       sync.Mutex
	applied  uint64        // the last batch taken
	changed  chan struct{} // closed when applied moves or the replica stops
	refused  map[uint64]error
	order    []uint64 // refused, oldest first
	err      error    // why it stopped for good
	pending  atomic.Uint64
	failures atomic.Int64
	// failing counts the failures since the last batch taken.
	failing atomic.Int64
	// startLast is the log's last batch when following began: the
	// replica is not ready before it took it.
	startLast uint64
	// consumer names the consumer the last message came through (the
	// apply loop's own field).
	consumer string

	cancel context.CancelFunc
	done   chan struct{}
}

// Follow starts applying l to w in the background, from w.Source() + 1.
// It fails at once when w's index is not the fleet's (ErrForeign) or the
// log no longer holds its next batch (ErrBehind).
func Follow(ctx context.Context, l *Log, w *live.Writer, o FollowOptions) (*Replica, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	switch origin := w.Origin(); {
	case origin == l.id: // a snapshot of this log, or a replica of it
	case origin != "":
		return nil, fmt.Errorf("%w: index %q follows the log %s, not %s (a stream created again is another log)", ErrForeign, l.index, origin, l.id)
	case w.Source() == 0:
		// The index as its folder holds it, with what its own update log
		// added: a copy of the folder without the log is another index.
		if err := w.Checkpoint(context.WithoutCancel(ctx)); err != nil { // not cut short by a start's bound
			return nil, err
		}
		if err := l.claimGenesis(ctx, w.Checksum()); err != nil {
			return nil, err
		}
	}
	r := &Replica{l: l, w: w, o: o, applied: w.Source(), changed: make(chan struct{}), refused: map[uint64]error{}, done: make(chan struct{})}
	if err := r.checkReachable(ctx); err != nil {
		return nil, err
	}
	_, last, err := l.Bounds(ctx)
	if err != nil {
		return nil, err
	}
	r.startLast = last
	w.SetOrigin(l.id)
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	go r.run(rctx)
	return r, nil
}

// checkReachable fails with ErrBehind when the log was trimmed past the
// replica's next batch.
func (r *Replica) checkReachable(ctx context.Context) error {
	first, last, err := r.l.Bounds(ctx)
	if err != nil {
		return err
	}
	next := r.w.Source() + 1
	if next < first {
		return fmt.Errorf("%w: index %q took batches up to %d, and the log now starts at %d: restore a snapshot", ErrBehind, r.l.index, next-1, first)
	}
	if next > last+1 {
		return fmt.Errorf("%w: index %q took batches up to %d, past the log's last (%d): it follows another log", ErrForeign, r.l.index, next-1, last)
	}
	return nil
}

func (r *Replica) run(ctx context.Context) {
	defer close(r.done)
	for {
		err := r.follow(ctx)
		if ctx.Err() != nil {
			r.stop(fmt.Errorf("fleet: the replica of %q was closed", r.l.index))
			return
		}
		if errors.Is(err, ErrBehind) || errors.Is(err, live.ErrClosed) || errors.Is(err, ErrForeign) {
			r.o.Logger.Error("fleet: the replica stopped following", "index", r.l.index, "err", err)
			r.stop(err)
			return
		}
		r.failures.Add(1)
		r.failing.Add(1)
		r.o.Logger.Warn("fleet: following the log failed; retrying", "index", r.l.index, "applied", r.Applied(), "err", err, "in", r.o.Retry)
		select {
		case <-ctx.Done():
		case <-time.After(r.o.Retry):
		}
	}
}

// follow reads the log from the replica's next batch and applies it
// until a failure or ctx's end.
func (r *Replica) follow(ctx context.Context) error {
	if err := r.checkReachable(ctx); err != nil {
		return err
	}
	cons, err := r.l.c.js.OrderedConsumer(ctx, r.l.name, jetstream.OrderedConsumerConfig{FilterSubjects: []string{r.l.subj},
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: r.w.Source() + 1, InactiveThreshold: 30 * time.Second})
	if err != nil {
		return err
	}
	// The client buffers at most pullBytes of messages, and the channel
	// a few more: a replica's memory does not grow with its lag.
	it, err := cons.Messages(jetstream.PullMaxBytes(pullBytes))
	if err != nil {
		return err
	}
	defer it.Stop()    // ends the reader's Next
	r.failing.Store(0) // following again: an idle log is no failure
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs := make(chan jetstream.Msg, 64)
	errc := make(chan error, 2)
	go r.probe(fctx, errc)
	go func() {
		for {
			m, err := it.Next()
			if err != nil {
				errc <- err
				return
			}
			select {
			case msgs <- m:
			case <-fctx.Done():
				errc <- fctx.Err()
				return
			}
		}
	}()
	for {
		group, err := r.gather(ctx, msgs, errc)
		if err != nil {
			return err
		}
		if err := r.apply(ctx, group); err != nil {
			return err
		}
	}
}

// probeEvery is how often a following replica asks the log for its state:
// the consumer waits quietly through a partition or a lost quorum (it
// retries by itself), so only asking tells that the log is out of reach,
// or that its stream was deleted and made again.
const probeEvery = 5 * time.Second

// probe asks the log for its state every probeEvery until ctx ends: an
// answer within the configured timeout resets the failures, none counts
// one (three make the replica unready), and another stream in its place
// ends the following (on errc).
func (r *Replica) probe(ctx context.Context, errc chan<- error) {
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, r.l.c.cfg.Timeout)
		_, _, err := r.l.Bounds(pctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, ErrForeign):
			errc <- err
			return
		case err != nil:
			r.failing.Add(1)
		default:
			r.failing.Store(0)
		}
	}
}

// gather waits for a message, then takes those already read, up to
// MaxBatch.
func (r *Replica) gather(ctx context.Context, msgs <-chan jetstream.Msg, errc <-chan error) ([]jetstream.Msg, error) {
	var group []jetstream.Msg
	select {
	case m := <-msgs:
		group = append(group, m)
	case err := <-errc:
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for len(group) < r.o.MaxBatch {
		select {
		case m := <-msgs:
			group = append(group, m)
		default:
			return group, nil
		}
	}
	return group, nil
}

// apply commits the messages' batches in order. A message that is not a
// batch is refused as one would be: it takes its number and changes
// nothing, on every replica.
func (r *Replica) apply(ctx context.Context, msgs []jetstream.Msg) error {
	next := r.w.Source() + 1
	var bs []*live.Batch
	var bad []error
	for _, m := range msgs {
		md, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("fleet: a message of %s without metadata: %w", r.l.name, err)
		}
		if md.Consumer != r.consumer {
			// The ordered consumer was made again (a reconnect, a node
			// lost, or the stream deleted and created anew): check that
			// the stream is still this log before taking its batches.
			if r.consumer != "" {
				if _, _, err := r.l.Bounds(ctx); err != nil {
					return err
				}
			}
			r.consumer = md.Consumer
		}
		seq := md.Sequence.Stream
		switch {
		case seq < next:
			continue // read again after a reconnect
		case seq > next:
			return fmt.Errorf("%w: index %q took batches up to %d and the log went on at %d", ErrBehind, r.l.index, next-1, seq)
		}
		b, derr := live.DecodeBatch(m.Data())
		if derr != nil {
			b = &live.Batch{}
			derr = &live.CheckError{Err: fmt.Errorf("log %s, record %d: %w", r.l.name, seq, derr)}
		}
		b.SetSource(seq)
		bs, bad = append(bs, b), append(bad, derr)
		r.pending.Store(md.NumPending)
		next++
	}
	for len(bs) > 0 {
		n := commitRun(bs)
		res := r.w.CommitAll(ctx, bs[:n])
		for i, x := range res {
			if x.Err != nil && !live.IsInvalid(x.Err) {
				return fmt.Errorf("fleet: applying batch %d of %s: %w", bs[i].Source(), r.l.name, x.Err)
			}
			outcome := x.Err
			if bad[i] != nil {
				outcome = bad[i]
			}
			r.took(bs[i].Source(), outcome)
		}
		bs, bad = bs[n:], bad[n:]
	}
	return nil
}

// pullBytes bounds the messages the client buffers for a replica.
const pullBytes = 32 << 20

// commitRun is how many of bs to commit together: a batch whose vectors
// the writer must make (published without them, not through a server)
// is committed alone, so that it is embedded against the index of every
// batch before it, as on every replica, however they group.
func commitRun(bs []*live.Batch) int {
	for i, b := range bs {
		if b.NeedsVectors() {
			return max(i, 1)
		}
	}
	return len(bs)
}

// took records that batch seq was taken, with its refusal (nil: applied).
func (r *Replica) took(seq uint64, refusal error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if refusal != nil {
		r.refused[seq] = refusal
		r.order = append(r.order, seq)
		if len(r.order) > r.o.Keep {
			delete(r.refused, r.order[0])
			r.order = r.order[1:]
		}
	}
	r.applied = seq
	r.failing.Store(0)
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *Replica) stop(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
		close(r.changed)
		r.changed = make(chan struct{})
	}
}

// Applied is the sequence of the last batch the replica took.
func (r *Replica) Applied() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied
}

// Pending is how many batches the log held past the last one the
// replica read, when it read it.
func (r *Replica) Pending() uint64 { return r.pending.Load() }

// Failures counts the times following failed and was retried.
func (r *Replica) Failures() int64 { return r.failures.Load() }

// Ready reports why the replica should not serve yet: it stopped, it
// has not taken the batches the log held when it began following, or
// following has failed three times in a row since its last batch.
func (r *Replica) Ready() error {
	if err := r.Err(); err != nil {
		return err
	}
	if a := r.Applied(); a < r.startLast {
		return fmt.Errorf("fleet: catching up: at batch %d of %d", a, r.startLast)
	}
	if n := r.failing.Load(); n >= 3 {
		return fmt.Errorf("fleet: following the log failed %d times in a row", n)
	}
	return nil
}

// Err is why the replica stopped following for good (nil while it
// follows).
func (r *Replica) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Wait waits until the replica has taken batch seq and returns the
// batch's refusal (nil: applied, or refused so long ago that the replica
// forgot). err is ctx's error, or why the replica stopped.
func (r *Replica) Wait(ctx context.Context, seq uint64) (refusal, err error) {
	for {
		r.mu.Lock()
		applied, changed, stopped, refused := r.applied, r.changed, r.err, r.refused[seq]
		r.mu.Unlock()
		if applied >= seq {
			return refused, nil
		}
		if stopped != nil {
			return nil, stopped
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Close stops following; the writer stays open (the caller's to close).
func (r *Replica) Close() {
	r.cancel()
	<-r.done
}
