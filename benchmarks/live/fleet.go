package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/index/fleet"
	"github.com/gleaner-rag/gleaner/index/fleet/fleettest"
	"github.com/gleaner-rag/gleaner/index/live"
)

// fleetRun is the fleet mode's settings.
type fleetRun struct {
	d                     time.Duration
	rate, writers, batch  int
	ingestRate            int // passages per second, all publishers (0: as fast as acknowledged)
	seed                  uint64
	killLeader, noSnapEnd bool
}

// fleetBench runs a 3-node NATS cluster in this process (loopback), two
// replicas of the index at base following its log, and measures: the
// passages per second the log acknowledges (stored on a majority of the
// 3 nodes) from o.writers publishers of o.batch-passage batches; each
// batch's lag from its acknowledgement to its apply on the replica that
// serves a steady o.rate BM25 queries per second (their p50/p99 idle and
// during the ingest); that both replicas end identical; and the catch-up
// of a fresh replica from a snapshot of the starting index (restore, then
// replay of the whole run), and from a snapshot taken at the end.
func fleetBench(c *corpus.Corpus, work, base string, o fleetRun) error {
	ctx := context.Background()
	cl, err := fleettest.New(filepath.Join(work, "nats"), 3)
	if err != nil {
		return err
	}
	defer cl.Shutdown()
	conn := func() (*fleet.Conn, error) {
		cfg := fleet.DefaultConfig(cl.URLs(), quiet)
		return fleet.Connect(ctx, cfg)
	}
	var conns []*fleet.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var logs []*fleet.Log
	for i := 0; i < 3; i++ { // the publishers', replica a's, replica b's
		c, err := conn()
		if err != nil {
			return err
		}
		conns = append(conns, c)
		l, err := c.OpenLog(ctx, "2wiki")
		if err != nil {
			return err
		}
		logs = append(logs, l)
	}
	a, err := startReplica(ctx, logs[1], base, filepath.Join(work, "a"))
	if err != nil {
		return err
	}
	defer a.close()
	b, err := startReplica(ctx, logs[2], base, filepath.Join(work, "b"))
	if err != nil {
		return err
	}
	defer b.close()
	start := time.Now()
	genesis, err := logs[1].PutSnapshot(ctx, a.w, work)
	if err != nil {
		return err
	}
	fmt.Printf("fleet: snapshot of the starting index: %d passages, %.1f MB, uploaded in %v\n",
		genesis.Nodes, float64(genesis.Bytes)/1e6, time.Since(start).Round(time.Millisecond))

	var idle latencyLog
	stop := make(chan struct{})
	go idle.run(b.w, c.Queries, o.rate, stop)
	time.Sleep(o.d)
	close(stop)
	idleP50, idleP99 := idle.percentiles()

	lag := newLagClock(b.r)
	var busy latencyLog
	stop = make(chan struct{})
	go busy.run(b.w, c.Queries, o.rate, stop)
	acked, elapsed, err := publishFor(ctx, logs[0], a.w, c, o, lag, cl)
	close(stop)
	if err != nil {
		return err
	}
	busyP50, busyP99 := busy.percentiles()
	_, last, err := logs[0].Bounds(ctx)
	if err != nil {
		return err
	}
	for _, r := range []*benchReplica{a, b} {
		if _, err := r.r.Wait(ctx, last); err != nil {
			return err
		}
	}
	lags := lag.stop()
	fmt.Printf("fleet: %d passages in %d batches acknowledged in %v by the 3-node log: %.0f passages/s (%d publishers, %d per batch)\n",
		acked, last, elapsed.Round(time.Millisecond), float64(acked)/elapsed.Seconds(), o.writers, o.batch)
	fmt.Printf("fleet: replica lag, acknowledgement to applied on the serving replica: p50 %v p99 %v max %v over %d batches\n",
		pct(lags, 0.5).Round(time.Microsecond), pct(lags, 0.99).Round(time.Microsecond), pct(lags, 1).Round(time.Microsecond), len(lags))
	fmt.Printf("fleet: BM25 at %d q/s on the serving replica: idle p50 %v p99 %v; during ingest p50 %v p99 %v\n", o.rate,
		idleP50.Round(time.Microsecond), idleP99.Round(time.Microsecond), busyP50.Round(time.Microsecond), busyP99.Round(time.Microsecond))
	fa, err := fingerprint(ctx, a.w, work)
	if err != nil {
		return err
	}
	fb, err := fingerprint(ctx, b.w, work)
	if err != nil {
		return err
	}
	if fa != fb {
		return fmt.Errorf("fleet: the replicas differ after %d batches: %s vs %s", last, fa, fb)
	}
	fmt.Printf("fleet: replicas a and b identical at batch %d (fingerprint %s), %d passages\n", last, fa, a.w.Index().Live())
	if err := catchUp(ctx, logs[0], work, "fresh-from-start", last, fa); err != nil {
		return err
	}
	if o.noSnapEnd {
		return nil
	}
	start = time.Now()
	end, err := logs[1].PutSnapshot(ctx, a.w, work)
	if err != nil {
		return err
	}
	fmt.Printf("fleet: snapshot at batch %d: %.1f MB, uploaded in %v\n", end.Seq, float64(end.Bytes)/1e6, time.Since(start).Round(time.Millisecond))
	return catchUp(ctx, logs[0], work, "fresh-from-end", last, fa)
}

// benchReplica is a live writer following a log.
type benchReplica struct {
	w *live.Writer
	r *fleet.Replica
}

func (r *benchReplica) close() {
	r.r.Close()
	r.w.Close()
}

// startReplica copies the index at base to dir and follows l into it.
func startReplica(ctx context.Context, l *fleet.Log, base, dir string) (*benchReplica, error) {
	if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
		return nil, err
	}
	return followDir(ctx, l, dir)
}

func followDir(ctx context.Context, l *fleet.Log, dir string) (*benchReplica, error) {
	w, err := openWriter(ctx, dir)
	if err != nil {
		return nil, err
	}
	r, err := fleet.Follow(ctx, l, w, fleet.DefaultFollowOptions(quiet))
	if err != nil {
		w.Close()
		return nil, err
	}
	return &benchReplica{w: w, r: r}, nil
}

// publishFor runs o.writers publishers of batches of new 100-word
// passages for o.d, and returns the passages acknowledged. With
// o.killLeader, the stream's leader node is stopped at a third of the
// run and started again at two thirds.
func publishFor(ctx context.Context, l *fleet.Log, w *live.Writer, c *corpus.Corpus, o fleetRun, lag *lagClock, cl *fleettest.Cluster) (int64, time.Duration, error) {
	var acked atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, o.writers)
	start := time.Now()
	deadline := start.Add(o.d)
	for i := 0; i < o.writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := newGenerator(c, o.seed+uint64(i))
			var every time.Duration // between one publisher's batches
			if o.ingestRate > 0 {
				every = time.Duration(float64(time.Second) * float64(o.batch*o.writers) / float64(o.ingestRate))
			}
			next := start.Add(time.Duration(i) * every / time.Duration(o.writers))
			for n := 0; time.Now().Before(deadline); n++ {
				if every > 0 {
					time.Sleep(time.Until(next))
					next = next.Add(every)
				}
				var b live.Batch
				ix := w.Index()
				for k := 0; k < o.batch; k++ {
					b.Add(live.NodeDocument(corpus.Node{ID: fmt.Sprintf("fleet-%d-%d-%d", i, n, k), Title: g.name(), Text: g.text(ix)}))
				}
				seq, err := l.Publish(ctx, &b)
				if err != nil {
					errc <- err
					return
				}
				lag.acked(seq, time.Now())
				acked.Add(int64(o.batch))
			}
		}()
	}
	if o.killLeader {
		time.Sleep(o.d / 3)
		if n := cl.Leader(fleetStream); n >= 0 {
			cl.Kill(n)
			fmt.Printf("fleet: stopped NATS node %d (the log's leader) at %v\n", n+1, time.Since(start).Round(time.Millisecond))
			time.Sleep(o.d / 3)
			if err := cl.Restart(n); err != nil {
				return 0, 0, err
			}
			fmt.Printf("fleet: started NATS node %d again at %v\n", n+1, time.Since(start).Round(time.Millisecond))
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	select {
	case err := <-errc:
		return 0, 0, err
	default:
	}
	return acked.Load(), elapsed, nil
}

// fleetStream is the stream of index "2wiki" (fleet's naming).
const fleetStream = "GLEANER_2wiki"

// catchUp restores the newest snapshot into a new folder, follows the log
// to batch last, and checks the result against the replicas' checksum.
func catchUp(ctx context.Context, l *fleet.Log, work, name string, last uint64, want string) error {
	dir := filepath.Join(work, name)
	start := time.Now()
	s, err := l.Restore(ctx, dir)
	if err != nil {
		return err
	}
	restored := time.Since(start)
	r, err := followDir(ctx, l, dir)
	if err != nil {
		return err
	}
	defer r.close()
	if _, err := r.r.Wait(ctx, last); err != nil {
		return err
	}
	total := time.Since(start)
	got, err := fingerprint(ctx, r.w, work)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("fleet: the replica caught up from snapshot %d differs: %s vs %s", s.Seq, got, want)
	}
	fmt.Printf("fleet: a fresh replica restored the snapshot at batch %d (%.1f MB) in %v and replayed %d batches to %d in %v more: caught up in %v, identical\n",
		s.Seq, float64(s.Bytes)/1e6, restored.Round(time.Millisecond), last-s.Seq, last, (total - restored).Round(time.Millisecond), total.Round(time.Millisecond))
	return nil
}

// fingerprint identifies the content of w's index (fleet.Fingerprint).
func fingerprint(ctx context.Context, w *live.Writer, work string) (string, error) {
	return fleet.Fingerprint(ctx, w, work)
}

// lagClock times each acknowledged batch until a replica applied it.
type lagClock struct {
	mu      sync.Mutex
	ackAt   map[uint64]time.Time
	applyAt map[uint64]time.Time
	done    chan struct{}
	cancel  context.CancelFunc
}

func newLagClock(r *fleet.Replica) *lagClock {
	ctx, cancel := context.WithCancel(context.Background())
	l := &lagClock{ackAt: map[uint64]time.Time{}, applyAt: map[uint64]time.Time{}, done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(l.done)
		seen := r.Applied()
		for {
			if _, err := r.Wait(ctx, seen+1); err != nil {
				return
			}
			now, upTo := time.Now(), r.Applied()
			l.mu.Lock()
			for s := seen + 1; s <= upTo; s++ {
				l.applyAt[s] = now
			}
			l.mu.Unlock()
			seen = upTo
		}
	}()
	return l
}

func (l *lagClock) acked(seq uint64, at time.Time) {
	l.mu.Lock()
	l.ackAt[seq] = at
	l.mu.Unlock()
}

// stop ends the clock and returns the lags, sorted (an apply seen before
// its publisher's acknowledgement arrived counts as 0).
func (l *lagClock) stop() []time.Duration {
	l.cancel()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Duration
	for s, a := range l.ackAt {
		if t, ok := l.applyAt[s]; ok {
			out = append(out, max(t.Sub(a), 0))
		}
	}
	slices.Sort(out)
	return out
}

// percentiles are the p50 and p99 since the last call.
func (l *latencyLog) percentiles() (time.Duration, time.Duration) {
	l.mu.Lock()
	s := l.lat
	l.lat = nil
	l.mu.Unlock()
	slices.Sort(s)
	return pct(s, 0.5), pct(s, 0.99)
}
