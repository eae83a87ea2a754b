// Package live updates an index in place while it serves: documents are
// added, replaced and deleted in batches, each made durable in a
// write-ahead log (index/wal) before it is acknowledged and visible to
// every reader from then on.
//
// The log sits beside the index, in the folder <index>.wal. A commit
// appends its batch to the log and syncs it, applies it to the current
// index in memory (index.Index.Apply: readers keep the snapshot they
// hold) and publishes the result. Commits that arrive together share one
// sync and one apply (group commit). When the log outgrows
// Options.CheckpointBytes, a checkpoint writes the current index over the
// one on disk (atomically, recording the last record it includes) and
// drops the log's older segments; opening replays what the index on disk
// lacks.
package live

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/wal"
	"github.com/gleaner-rag/gleaner/internal/parallel"
	"github.com/gleaner-rag/gleaner/models"
)

// ErrExists and ErrNotFound mark a change that names a document the index
// has (Add) or lacks (Delete).
var (
	ErrExists   = errors.New("already in the index")
	ErrNotFound = errors.New("not in the index")
	// ErrClosed is returned by a Writer after Close, or after a failed
	// log write (reopen the index).
	ErrClosed = errors.New("live: the writer is closed")
	// ErrTooLarge marks a batch over the log's record limit: split it.
	ErrTooLarge = errors.New("too large")
	// ErrOutOfOrder marks a numbered batch (Batch.SetSource) that is not
	// the one after the last the writer took: nothing of it was applied;
	// send the writer's next (Writer.Source() + 1).
	ErrOutOfOrder = errors.New("live: batch out of order")
)

// Options configure a Writer.
type Options struct {
	Logger *slog.Logger // required
	// Embedder embeds added passages for an index whose vectors came
	// from a text embedder (index.OpenWith); nil for LSA and precomputed
	// vectors.
	Embedder models.Embedder
	// CheckpointBytes is the log size that starts a checkpoint (> 0).
	CheckpointBytes int64
	// MaxGroup bounds how many batches one commit gathers (> 0).
	MaxGroup int
	// MinInterval is the least time between two commits' starts (≥ 0;
	// default 0): batches arriving meanwhile wait and share the next, so
	// a stream of small commits makes fewer indexes. It delays a client
	// that commits one batch after another by up to this much each
	// time; commits that arrive together share one at any setting.
	MinInterval time.Duration
	// ApplyShare bounds the share of the time commits may take, in
	// (0, 1]: after a commit that took d, the next starts no sooner than
	// d/ApplyShare after it began; writes arriving meanwhile share it
	// (1, the default: no bound beyond MinInterval). Each commit costs a
	// pass over the index, so under a steady stream of writes this keeps
	// the writer from taking a whole core from queries, at the price of
	// latency per write.
	ApplyShare float64
	// NoSync skips fsync (tests of logic only).
	NoSync bool
	// OpenOptions open the index (Copy reads it into memory).
	OpenOptions store.OpenOptions
	// OnPublish, when set, is called with each index the writer
	// publishes (after the log holds its changes), in order, before the
	// commits that made it return: a server swaps it in there.
	OnPublish func(*index.Index)
	// RefreshAfter is how long the writes must pause before the stale
	// sections that can be built in memory (index.RefreshStale: the
	// Tri-Graph, the HNSW graph, locally extracted KET-RAG) are built again in the background and
	// published (≥ 0; 0, the default: only Refresh does it). It needs
	// Refresh.Backend.
	RefreshAfter time.Duration
	// RefreshWithin bounds how long such sections stay stale while the
	// writes go on without the pause RefreshAfter waits for (≥ 0; 0, the
	// default: no bound). Once a section has been stale that long, the
	// next refresh holds the commits until it is published, so it cannot
	// be overtaken: they wait, about as long as a build of the section (a
	// Commit whose context ends meanwhile returns its error, its batch not
	// applied). It needs RefreshAfter.
	RefreshWithin time.Duration
	// CPU, when set, is held while a commit works (checking, embedding
	// and applying its batches; not while the log syncs): a server shares
	// it with the decoding of its write requests, so that the write work
	// together takes at most the gate's cores and queries keep the rest.
	// A commit holds one place: its analysis runs on one goroutine
	// (parallel.Workers) and its long loops yield the core to waiting
	// goroutines (parallel.Yield).
	CPU Gate
	// IdleThreads runs commits, merges, and the checkpoints and refreshes
	// the writer starts by itself on threads that the kernel runs only
	// when no other thread wants the core (Linux's SCHED_IDLE; other
	// systems run them as usual, and Open logs a warning): a query's
	// thread that wakes preempts them at once instead of waiting out
	// their time slice, some ms. Only the goroutine that runs each is
	// idle: one a refresh's build spreads its work over runs as usual, as
	// do Checkpoint and Refresh called by hand. The cost falls on writes:
	// when queries keep every core busy, commits wait for a free one. A
	// process doing this should have a P (GOMAXPROCS) for each core
	// besides those the write work holds.
	IdleThreads bool
	// Refresh is what a refresh builds with (its Logger defaults to
	// Logger).
	Refresh index.RefreshEnv
	// DeletedShare bounds the share of an index's nodes that may be
	// deleted in place, in [0, 1): a commit marks the nodes it removes
	// deleted (index.Change.Tombstone), so it costs what it changes,
	// until they would pass this share of the nodes; that commit
	// renumbers the index without them (a pass over every array). Queries
	// over an index with deleted nodes take the filtered paths (a live
	// set, retrieve.Visible). 0 renumbers at every removal. Default 1/8.
	DeletedShare float64
	// MergeShare is the share of deleted nodes past which the writer
	// starts a merge in the background (Merge): it renumbers the index
	// without them while the commits go on, so that under writes that
	// never pause no commit has to (DeletedShare is then the backstop).
	// In [0, 1); 0: none while the writes go on (a refresh, and so a
	// pause of RefreshAfter, still merges); at or above DeletedShare, the
	// commit past DeletedShare renumbers first, so none starts. Default
	// 1/16, half the default DeletedShare.
	MergeShare float64
}

// maxGroup bounds Options.MaxGroup, which sizes the commit queue.
const maxGroup = 1 << 16

// DefaultOptions are the options Open expects unless told otherwise.
func DefaultOptions(log *slog.Logger) Options {
	return Options{Logger: log, CheckpointBytes: 64 << 20, MaxGroup: 1024, ApplyShare: 1, DeletedShare: 1.0 / 8, MergeShare: 1.0 / 16}
}

func (o *Options) validate() error {
	switch {
	case o.Logger == nil:
		return fmt.Errorf("live: Options.Logger is required")
	case o.CheckpointBytes <= 0:
		return fmt.Errorf("live: Options.CheckpointBytes %d: want > 0", o.CheckpointBytes)
	case o.MaxGroup <= 0 || o.MaxGroup > maxGroup:
		return fmt.Errorf("live: Options.MaxGroup %d: want 1 to %d (it sizes the commit queue)", o.MaxGroup, maxGroup)
	case o.MinInterval < 0:
		return fmt.Errorf("live: Options.MinInterval %v: want ≥ 0", o.MinInterval)
	case !(o.ApplyShare >= minShare && o.ApplyShare <= 1):
		return fmt.Errorf("live: Options.ApplyShare %v: want a share in [%v, 1] (1: no bound)", o.ApplyShare, minShare)
	case !(o.DeletedShare >= 0 && o.DeletedShare < 1):
		return fmt.Errorf("live: Options.DeletedShare %v: want a share in [0, 1) (0: renumber at every removal)", o.DeletedShare)
	case !(o.MergeShare >= 0 && o.MergeShare < 1):
		return fmt.Errorf("live: Options.MergeShare %v: want a share in [0, 1) (0: no background merge)", o.MergeShare)
	case o.Refresh.Workers < 0:
		return fmt.Errorf("live: Options.Refresh.Workers %d: want ≥ 0 (0: one per CPU)", o.Refresh.Workers)
	case o.RefreshAfter < 0:
		return fmt.Errorf("live: Options.RefreshAfter %v: want ≥ 0 (0: no background refresh)", o.RefreshAfter)
	case o.RefreshWithin < 0:
		return fmt.Errorf("live: Options.RefreshWithin %v: want ≥ 0 (0: no bound)", o.RefreshWithin)
	case o.RefreshWithin > 0 && o.RefreshAfter == 0:
		return fmt.Errorf("live: Options.RefreshWithin %v needs Options.RefreshAfter (the background refresh it bounds)", o.RefreshWithin)
	case o.RefreshAfter > 0 && o.Refresh.Backend == nil:
		return fmt.Errorf("live: Options.RefreshAfter %v needs Options.Refresh.Backend (engine.Open) to build sections with", o.RefreshAfter)
	}
	if o.Refresh.Logger == nil {
		o.Refresh.Logger = o.Logger
	}
	return nil
}

// LogDir is where the update log of the index at dir lives.
func LogDir(dir string) string { return index.LogDir(dir) }

// Writer updates one index. Commit, Index, Stats and Checkpoint are safe
// for concurrent use. The indexes Index returns belong to the writer:
// readers must not Close them, and must be done with them before Close.
type Writer struct {
	dir  string
	o    Options
	base *index.Index // the index opened from disk; later ones borrow its mapping
	log  *wal.Log
	cur  atomic.Pointer[index.Index]

	queue  chan *request
	stop   chan struct{}
	done   chan struct{} // the commit loop ended
	ckDone chan struct{} // the checkpoint loop ended
	rfDone chan struct{} // the refresh loop ended
	mgDone chan struct{} // the merge loop ended
	// mg wakes the merge loop when a commit leaves more deleted nodes
	// than MergeShare.
	mg chan struct{}
	// tail collects the records committed during a merge (under mu).
	tail *mergeTail
	// afterCompact, set by tests, runs between a merge's compaction and
	// its catch-up.
	afterCompact func()

	// rf wakes the refresh loop at each publish; rfMu runs one refresh
	// at a time; rfCtx ends at Close.
	rf       chan struct{}
	rfMu     sync.Mutex
	rfCtx    context.Context
	rfCancel context.CancelFunc
	// unsaved: a refresh published sections the index on disk lacks.
	unsaved atomic.Bool
	// lastBuild is how long the last refresh took (nanoseconds).
	lastBuild atomic.Int64

	closeMu sync.Mutex
	closed  bool

	mu  sync.Mutex // the commit loop's state, with ck
	cat *catalog
	// kinds keep derived edge kinds (mentions) true through changes.
	kinds []index.KindUpdater
	err   error  // the writer failed: commits are refused
	sum   string // the manifest checksum of the index on disk
	// written is the last log record the index on disk includes.
	written uint64
	ckMu    sync.Mutex // one checkpoint at a time
	// logClosed: Close closed the log (under ckMu).
	logClosed bool
	ck        chan struct{}

	stats stats

	// source is the last numbered batch taken (Batch.SetSource): applied,
	// or refused by its checks. Written under mu.
	source atomic.Uint64
	// origin names the log the numbers come from (SetOrigin).
	origin atomic.Pointer[string]
}

// liveState is what an index written at log record seq, including the
// numbered batches up to source, records of its place.
func (w *Writer) liveState(seq, source uint64) *index.LiveState {
	return &index.LiveState{Log: w.log.Header().ID, Seq: seq, Source: source, Origin: w.Origin()}
}

// Origin names the log the writer's numbered batches come from, as the
// index on disk recorded it or SetOrigin set it ("" for none).
func (w *Writer) Origin() string {
	if p := w.origin.Load(); p != nil {
		return *p
	}
	return ""
}

// SetOrigin names the log the writer's numbered batches come from; the
// next checkpoint records it with the index.
func (w *Writer) SetOrigin(name string) { w.origin.Store(&name) }

// Checksum is the manifest checksum of the index on disk (as of the last
// checkpoint).
func (w *Writer) Checksum() string {
	w.ckMu.Lock()
	defer w.ckMu.Unlock()
	return w.sum
}

// following reports whether the writer takes its changes from a log: it
// was told so, or it took numbered batches (its origin is recorded only
// at the next checkpoint).
func (w *Writer) following() bool { return w.Origin() != "" || w.source.Load() != 0 }

// originName names the log the writer follows, for messages.
func (w *Writer) originName() string {
	if o := w.Origin(); o != "" {
		return o
	}
	return "(a log whose name the index has not recorded yet)"
}

// Detach makes the index forget the log it followed (Origin and Source):
// it takes local commits and refits again, and may begin another fleet.
// The index on disk records it before Detach returns.
func (w *Writer) Detach(ctx context.Context) error {
	w.mu.Lock()
	w.SetOrigin("")
	w.source.Store(0)
	w.unsaved.Store(true) // written even with no new record
	w.mu.Unlock()
	return w.Checkpoint(ctx)
}

type stats struct {
	commits, batches, checkpoints atomic.Int64
	compactions                   atomic.Int64
	ckNanos, ckLastNanos          atomic.Int64
	replayed                      atomic.Int64
	refreshes, refreshFailures    atomic.Int64
	rfNanos                       atomic.Int64
	merges, mergeFailures         atomic.Int64
	mergeNanos                    atomic.Int64
}

type request struct {
	ctx    context.Context
	ops    []op
	source uint64 // Batch.SetSource
	// res is the outcome the loop sends once the group is decided (the
	// loop's own field).
	res  Result
	done chan Result // buffered: the loop never waits on a caller gone
	// state: queued, taken by the commit loop, or abandoned by a caller
	// whose context ended first (the loop then skips it).
	state atomic.Int32
}

const (
	queued int32 = iota
	taken
	abandoned
)

// Result is what a commit did.
type Result struct {
	Seq   uint64 // the batch's log record
	Nodes int    // nodes in the index after it
	Err   error
}

// Open opens the index at dir for updates, replaying the log's records
// the index on disk lacks. It fails when another process has the log.
func Open(ctx context.Context, dir string, o Options) (*Writer, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.IdleThreads && !parallel.OnIdleThread(func() {}) {
		o.Logger.Warn("idle threads are not available here (Linux's SCHED_IDLE, refused or absent): write work runs on ordinary threads", "dir", dir)
	}
	index.CleanDebris(o.Logger, dir) // a killed checkpoint's staging folder
	base, err := openIndex(dir, o.OpenOptions, o.Embedder)
	if err != nil {
		return nil, err
	}
	w := &Writer{dir: dir, o: o, base: base, sum: base.Manifest.Checksum, queue: make(chan *request, o.MaxGroup),
		stop: make(chan struct{}), done: make(chan struct{}), ckDone: make(chan struct{}), rfDone: make(chan struct{}),
		mgDone: make(chan struct{}), ck: make(chan struct{}, 1), rf: make(chan struct{}, 1), mg: make(chan struct{}, 1)}
	if err := w.openLog(ctx); err != nil {
		base.Close()
		return nil, err
	}
	w.rfCtx, w.rfCancel = context.WithCancel(context.Background())
	go w.commitLoop()
	go w.checkpointLoop()
	go w.refreshLoop()
	go w.mergeLoop()
	w.mu.Lock()
	w.wakeMerge(w.cur.Load()) // the log's replay may have left a merge to do
	w.mu.Unlock()
	return w, nil
}

func openIndex(dir string, opt store.OpenOptions, e models.Embedder) (*index.Index, error) {
	if e != nil {
		return index.OpenWith(dir, opt, e)
	}
	return index.Open(dir, opt)
}

// openLog opens (or starts) the log, checks that it extends this index,
// and replays what the index lacks.
func (w *Writer) openLog(ctx context.Context) error {
	var after uint64
	if lv := w.base.Meta.Live; lv != nil {
		after = lv.Seq
	}
	l, err := wal.Open(LogDir(w.dir), w.base.Manifest.Checksum, after+1, wal.Options{Logger: w.o.Logger, NoSync: w.o.NoSync})
	if err != nil {
		return err
	}
	h := l.Header()
	lv := w.base.Meta.Live
	switch {
	case lv != nil && h.ID == lv.Log && l.Last() < lv.Seq:
		l.Close()
		return fmt.Errorf("live: the update log %s ends at record %d, before record %d, which the index at %s includes: it was truncated or restored from an older copy; move it away to start a new one",
			LogDir(w.dir), l.Last(), lv.Seq, w.dir)
	case lv != nil && h.ID == lv.Log:
	case lv == nil && h.Extends == w.base.Manifest.Checksum:
	case l.Empty() && l.Last() == after:
		// an empty log the index has not met: it takes over from here
	default:
		l.Close()
		return fmt.Errorf("live: the update log %s (id %s, %d records) does not belong to the index at %s (rebuilt since?): move the log away to start a new one, or restore the index it extends",
			LogDir(w.dir), h.ID, l.Last(), w.dir)
	}
	w.log, w.written = l, after
	if lv != nil {
		w.source.Store(lv.Source)
		w.SetOrigin(lv.Origin)
	}
	w.cat = newCatalog(w.base)
	w.kinds = w.kindUpdaters(ctx, w.base)
	w.cur.Store(w.base)
	if err := w.replay(ctx, after); err != nil {
		l.Close()
		return err
	}
	return nil
}

// kindUpdaters makes the updaters of the index's derived kinds; a kind
// without one goes stale at the first change, and the log says why.
func (w *Writer) kindUpdaters(ctx context.Context, ix *index.Index) []index.KindUpdater {
	kinds, failed := index.KindUpdaters(ctx, ix)
	for k, err := range failed {
		w.o.Logger.Warn("these edges will not follow changes and go stale at the first one", "dir", w.dir, "kind", k, "reason", err)
	}
	return kinds
}

// remakeKinds makes the kind updaters anew from ix (under mu), after a
// change they followed failed; a merge running can no longer replay the
// commits with the rows they recorded.
func (w *Writer) remakeKinds(ix *index.Index) {
	w.kinds = w.kindUpdaters(context.Background(), ix)
	if w.tail != nil {
		w.tail.broken = true
	}
}

// change is p's change, with the kind updaters. It deletes in place
// while the deleted nodes stay within Options.DeletedShare of the nodes.
func (w *Writer) change(p *pending) *index.Change { return w.changeWith(p, w.kinds) }

// changeWith is p's change with the kind updaters kinds.
func (w *Writer) changeWith(p *pending, kinds []index.KindUpdater) *index.Change {
	ch := p.change()
	ch.Kinds = kinds
	deleted := p.base.Deleted() + len(ch.Remove)
	ch.Tombstone = float64(deleted) <= w.o.DeletedShare*float64(p.base.N()+len(ch.Add))
	return ch
}

// replay applies the log's records after after, replayGroup changes at
// a time (a replayer over the writer's index, catalog and updaters).
func (w *Writer) replay(ctx context.Context, after uint64) error {
	r := w.newReplayer(w.cur.Load(), w.cat, w.kinds)
	n := 0
	err := w.log.Replay(after, func(seq uint64, payload []byte) error {
		ops, source, err := decodeRecord(payload)
		if err == nil {
			err = r.accept(ops)
		}
		if err != nil {
			return fmt.Errorf("live: log %s, record %d: %w", LogDir(w.dir), seq, err)
		}
		if source > w.source.Load() {
			w.source.Store(source)
		}
		n++
		if r.full() {
			return w.replayed(r.flush(ctx))
		}
		return nil
	})
	if err == nil {
		err = w.replayed(r.flush(ctx))
	}
	w.cur.Store(r.ix)
	w.cat, w.kinds = r.cat, r.kinds
	if n > 0 {
		w.o.Logger.Info("replayed the update log", "dir", w.dir, "records", n, "nodes", r.ix.Live())
		w.stats.replayed.Add(int64(n))
	}
	return err
}

// replayed names the log in a replay's failure to apply its records.
func (w *Writer) replayed(err error) error {
	if err != nil {
		return fmt.Errorf("live: replaying the log %s: %w", LogDir(w.dir), err)
	}
	return nil
}

// Dir is the folder of the writer's index.
func (w *Writer) Dir() string { return w.dir }

// Index is the current index: every commit that returned is in it.
func (w *Writer) Index() *index.Index { return w.cur.Load() }

// Source is the number of the last numbered batch the writer took
// (Batch.SetSource): applied, or refused by its checks; 0 for none. It
// survives a reopen.
func (w *Writer) Source() uint64 { return w.source.Load() }

// Position is the current index and the number of the last numbered
// batch it reflects (Source), read together.
func (w *Writer) Position() (*index.Index, uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur.Load(), w.source.Load()
}

// Commit makes b durable and visible: when it returns without error, the
// log on disk holds b and Index includes it. A batch that fails its
// checks changes nothing. ctx bounds the wait for the batch's turn; once
// its turn came, Commit waits for the outcome.
func (w *Writer) Commit(ctx context.Context, b *Batch) (Result, error) {
	if b.Len() == 0 && b.source == 0 {
		return Result{Seq: w.log.Last(), Nodes: w.Index().Live()}, nil
	}
	req, err := w.enqueue(ctx, b)
	if err != nil {
		return Result{}, err
	}
	return w.await(ctx, req)
}

// CommitAll commits the batches in their order and returns each one's
// outcome (Result.Err), as Commit would have; batches queued together
// share commits. It is how a follower of a log (index/fleet) applies
// what it read: the writer keeps their order only among the batches of
// one caller, so numbered batches (Batch.SetSource) must come from one.
func (w *Writer) CommitAll(ctx context.Context, bs []*Batch) []Result {
	out := make([]Result, len(bs))
	reqs := make([]*request, len(bs))
	for i, b := range bs {
		req, err := w.enqueue(ctx, b)
		if err != nil {
			for j := i; j < len(bs); j++ {
				out[j].Err = err
			}
			break
		}
		reqs[i] = req
	}
	for i, req := range reqs {
		if req != nil {
			r, err := w.await(ctx, req)
			if r.Err == nil {
				r.Err = err // abandoned, or the writer closed: not applied
			}
			out[i] = r
		}
	}
	return out
}

// enqueue hands b to the commit loop.
func (w *Writer) enqueue(ctx context.Context, b *Batch) (*request, error) {
	req := &request{ctx: ctx, ops: b.ops, source: b.source, done: make(chan Result, 1)}
	select {
	case <-w.stop:
		return nil, ErrClosed
	default:
	}
	select {
	case w.queue <- req:
		return req, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-w.stop:
		return nil, ErrClosed
	}
}

// await waits for the outcome of a queued request.
func (w *Writer) await(ctx context.Context, req *request) (Result, error) {
	select {
	case r := <-req.done:
		return r, r.Err
	case <-ctx.Done():
		// Given up while waiting for its turn (a held refresh, a refit,
		// a long queue): the loop skips it. Once taken, its outcome comes.
		if req.state.CompareAndSwap(queued, abandoned) {
			return Result{}, ctx.Err()
		}
		return w.outcome(req)
	case <-w.done:
		return w.outcome(req)
	}
}

// outcome waits for the answer to a request the loop took, or for the
// loop's end (it answered the request if it took it).
func (w *Writer) outcome(req *request) (Result, error) {
	select {
	case r := <-req.done:
		return r, r.Err
	case <-w.done:
		select {
		case r := <-req.done:
			return r, r.Err
		default:
			return Result{}, ErrClosed
		}
	}
}

func (w *Writer) commitLoop() {
	defer close(w.done)
	var next time.Time // the earliest start of the next group
	for {
		select {
		case <-w.stop:
			w.drain(ErrClosed)
			return
		case req := <-w.queue:
			group := w.gather(req, next)
			start := time.Now()
			next = w.nextStart(start, w.commitGroup(group))
		}
	}
}

// nextStart is when the group after one that started at start and took
// took may start: MinInterval after start, and late enough that commits
// spend at most ApplyShare of the time (a commit's cost grows with the
// index: under a stream of writes, later groups gather more instead of
// taking a core from the queries).
func (w *Writer) nextStart(start time.Time, took time.Duration) time.Time {
	next := start.Add(w.o.MinInterval)
	if s := w.o.ApplyShare; s > 0 && s < 1 {
		wait := min(float64(took)/s, float64(maxShareWait))
		next = later(next, start.Add(time.Duration(wait)))
	}
	return next
}

// maxShareWait bounds the pause ApplyShare puts between two commits (a
// commit slowed by a refit, or a very large one, must not stall writes).
const maxShareWait = 10 * time.Second

// minShare is the least ApplyShare.
const minShare = 0.01

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// gather collects the batches queued behind first, waiting until
// notBefore for more (so that a stream of commits makes one index per
// MinInterval, not one per commit: each costs a pass over the index).
func (w *Writer) gather(first *request, notBefore time.Time) []*request {
	group := []*request{first}
	wait := time.NewTimer(time.Until(notBefore))
	defer wait.Stop()
	for len(group) < w.o.MaxGroup {
		select {
		case r := <-w.queue:
			group = append(group, r)
		case <-wait.C:
			return w.takeQueued(group)
		case <-w.stop:
			return group
		}
	}
	return group
}

// takeQueued adds what is queued now, without waiting.
func (w *Writer) takeQueued(group []*request) []*request {
	for len(group) < w.o.MaxGroup {
		select {
		case r := <-w.queue:
			group = append(group, r)
		default:
			return group
		}
	}
	return group
}

// drain answers every queued request with err.
func (w *Writer) drain(err error) {
	for {
		select {
		case r := <-w.queue:
			r.done <- Result{Err: err}
		default:
			return
		}
	}
}

// commitGroup checks, logs, applies and publishes a group of batches,
// and returns how long that took once it held the writer (not counting
// a wait for a refit or a checkpoint's snapshot).
func (w *Writer) commitGroup(group []*request) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	start := time.Now()
	w.work(func() { w.commitLocked(group) })
	return time.Since(start)
}

// work runs fn, on an idle thread where the options ask for it.
func (w *Writer) work(fn func()) { parallel.Run(w.o.IdleThreads, fn) }

// commitLocked is commitGroup under w.mu.
func (w *Writer) commitLocked(group []*request) {
	if w.err != nil {
		answerAll(group, w.err)
		return
	}
	taken := w.take(group)
	if !w.applyGroup(taken) {
		// The change of the group could not be applied. Each batch is
		// committed alone, so that its outcome does not depend on the
		// batches it came with (a follower of a log groups them as they
		// arrive; every follower must decide alike): one that fails alone,
		// on the renumbered layout too, is refused.
		w.o.Logger.Warn("a group of batches could not be applied together: committing them one at a time", "dir", w.dir, "batches", len(taken))
		for _, r := range taken {
			if w.err == nil {
				w.applyGroup([]*request{r})
			} else {
				r.res = Result{Err: w.err}
			}
		}
	}
	for _, r := range taken {
		r.done <- r.res
	}
}

// take marks the requests taken, answering those whose callers gave up.
func (w *Writer) take(group []*request) []*request {
	var out []*request
	for _, r := range group {
		if r.state.CompareAndSwap(queued, taken) {
			out = append(out, r)
		} else {
			r.done <- Result{Err: context.Canceled} // its caller gave up and was answered
		}
	}
	return out
}

// applyGroup checks, applies, logs and publishes the requests' batches,
// leaving each outcome in its request. It reports false, deciding
// nothing, when two or more batches passed their checks but their change
// could not be applied.
func (w *Writer) applyGroup(reqs []*request) bool {
	cur := w.cur.Load()
	p := newPending(cur, w.cat)
	cpu := w.o.CPU
	cpu.Enter()
	working := true
	leave := func() {
		if working {
			cpu.Leave()
			working = false
		}
	}
	defer leave()
	source := w.source.Load()
	var accepted []*request
	var payloads [][]byte
	for _, r := range reqs {
		payload, err := w.prepare(p, r, source)
		r.res = Result{Err: err}
		if err == nil {
			accepted, payloads = append(accepted, r), append(payloads, payload)
		}
		if r.source != 0 && (err == nil || IsInvalid(err)) {
			source = r.source // taken: applied or refused
		}
	}
	if len(accepted) == 0 {
		w.source.Store(source)
		return true
	}
	// The next index is made before the log is written, so a change that
	// cannot be applied is refused, never logged (it would stop every
	// later open); it is published only once the log holds it.
	ch := w.change(p)
	var rows kindRows // the rows the kinds remake, for a merge running
	if w.tail != nil {
		rows = kindRows{}
		ch.Kinds = recorders(w.kinds, rows)
	}
	next, err := cur.Apply(cpu.bound(context.Background()), ch)
	if err != nil && len(reqs) == 1 && ch.Tombstone {
		// Deleting in place is this writer's layout, which depends on
		// its history: a batch it fails for is tried on the renumbered
		// layout, every writer's, before it is refused.
		w.remakeKinds(cur) // they may have followed the change
		ch.Kinds, ch.Tombstone = w.kinds, false
		next, err = cur.Apply(cpu.bound(context.Background()), ch)
	}
	if err != nil {
		w.cat = newCatalog(cur) // undo the accepted batches
		w.remakeKinds(cur)      // they may have followed the change
		if len(reqs) > 1 {
			// Decided one batch at a time instead: the batches checked
			// after one that fails here must be checked without it.
			return false
		}
		w.o.Logger.Error("live update refused: the change could not be applied", "dir", w.dir, "err", err)
		accepted[0].res.Err = &CheckError{fmt.Errorf("live: the change could not be applied: %w", err)}
		w.source.Store(source)
		return true
	}
	if !ch.Tombstone {
		w.stats.compactions.Add(1)
	}
	leave() // the log's sync waits for the disk
	first, err := w.log.Append(payloads...)
	if err != nil {
		w.err = fmt.Errorf("%w: %v (the writer stopped: reopen the index to recover from the log)", ErrClosed, err)
		w.o.Logger.Error("live update failed", "dir", w.dir, "err", err)
		for _, r := range reqs {
			r.res = Result{Err: w.err}
		}
		return true
	}
	w.source.Store(source)
	if w.tail != nil {
		w.tail.entries = append(w.tail.entries, tailEntry{payloads: payloads, rows: rows})
	}
	w.publish(next)
	w.wakeMerge(next)
	w.stats.batches.Add(int64(len(accepted))) // before anyone is answered: Stats after a Commit includes it
	for i, r := range accepted {
		r.res = Result{Seq: first + uint64(i), Nodes: next.Live()}
	}
	if w.log.Stats().Bytes >= w.o.CheckpointBytes {
		select {
		case w.ck <- struct{}{}:
		default:
		}
	}
	return true
}

func answerAll(rs []*request, err error) {
	for _, r := range rs {
		r.done <- Result{Err: err}
	}
}

// prepare checks a batch, embeds its passages and accepts it into p,
// returning its log record. source is the last numbered batch taken
// before it.
func (w *Writer) prepare(p *pending, r *request, source uint64) ([]byte, error) {
	if r.source != 0 && r.source != source+1 {
		return nil, fmt.Errorf("%w: batch %d, after %d", ErrOutOfOrder, r.source, source)
	}
	if r.source == 0 && w.following() {
		return nil, &CheckError{fmt.Errorf("live: the index follows the log %s: write through it (a change committed here would be on this replica alone)", w.originName())}
	}
	if err := r.ctx.Err(); err != nil {
		return nil, err
	}
	if r.source == 0 { // a new write, not a log's batch
		if err := checkNew(p.base, r.ops); err != nil {
			return nil, err
		}
	}
	if err := p.check(r.ops); err != nil {
		return nil, err
	}
	work := w.o.CPU.bound(r.ctx)
	if err := w.embed(work, p.base, r.ops); err != nil {
		return nil, err
	}
	payload, err := encodeRecord(r.ops, r.source)
	if err != nil {
		return nil, err
	}
	if len(payload) > wal.MaxRecord {
		return nil, &CheckError{fmt.Errorf("live: the batch takes %d bytes, over the log's limit of %d: %w; split it", len(payload), wal.MaxRecord, ErrTooLarge)}
	}
	// The writer keeps the batch as the log holds it, decoded: nothing it
	// retains (the catalog, the mentions state) shares memory with the
	// caller's strings, one of which, cut from an index in memory, would
	// keep that whole index alive; and a commit applies exactly what a
	// replay of its record will.
	parallel.Yield(work) // the encoding and the decoding each take about a ms per 50 passages
	ops, _, err := decodeRecord(payload)
	if err != nil {
		return nil, fmt.Errorf("live: decoding the batch's own record: %w", err)
	}
	parallel.Yield(work)
	return payload, p.accept(ops)
}

// Embed fills in the vectors of b's added and replaced documents that
// have none, with the current index's embedder (LSA fold-in, or the
// index's text embedder): a batch published to a fleet carries them, so
// that every replica applies the same vectors whatever its hardware and
// however it groups batches.
func (w *Writer) Embed(ctx context.Context, b *Batch) error {
	return w.embed(ctx, w.Index(), b.ops)
}

// embed fills in the vectors of added documents that have none, so the
// log holds them and replay does not depend on the embedder.
func (w *Writer) embed(ctx context.Context, ix *index.Index, ops []op) error {
	for i := range ops {
		x := &ops[i]
		if x.Kind == opDelete || x.Vectors != nil {
			continue
		}
		if ix.Embedder == nil || ix.Meta.Embedder == index.EmbedderPrecomputed {
			return &CheckError{fmt.Errorf("change %d (%s %q): field vectors: the index's vectors come from %q, which gleaner does not run here: give each passage's vector",
				i+1, x.Kind, x.ID, ix.Meta.Embedder)}
		}
		texts := make([]string, len(x.Nodes))
		for j := range x.Nodes {
			texts[j] = index.IndexText(&x.Nodes[j])
		}
		v, err := ix.Embedder.Embed(ctx, texts)
		if err != nil {
			return fmt.Errorf("change %d (%s %q): embedding its passages: %w", i+1, x.Kind, x.ID, err)
		}
		if len(v) != len(texts)*ix.Meta.Dims {
			return fmt.Errorf("change %d: embedder %s returned %d values for %d passages of %d dims", i+1, ix.Embedder.Name(), len(v), len(texts), ix.Meta.Dims)
		}
		if err := models.CheckFinite(v, ix.Meta.Dims); err != nil {
			return fmt.Errorf("change %d: embedder %s: %w", i+1, ix.Embedder.Name(), err)
		}
		x.Vectors = packFloats(v)
	}
	return nil
}

func (w *Writer) publish(next *index.Index) {
	w.cur.Store(next)
	w.stats.commits.Add(1)
	if w.o.OnPublish != nil {
		w.o.OnPublish(next)
	}
	select {
	case w.rf <- struct{}{}:
	default:
	}
}

func (w *Writer) checkpointLoop() {
	defer close(w.ckDone)
	for {
		select {
		case <-w.stop:
			return
		case <-w.ck:
			var err error
			w.work(func() { err = w.Checkpoint(context.Background()) })
			if err != nil {
				w.o.Logger.Error("checkpoint failed; the log keeps every change and the next one retries", "dir", w.dir, "err", err)
			}
		}
	}
}

// Checkpoint writes the current index over the one on disk and drops the
// log records it includes. Commits go on meanwhile.
func (w *Writer) Checkpoint(ctx context.Context) error {
	w.ckMu.Lock()
	defer w.ckMu.Unlock()
	if w.logClosed {
		return ErrClosed
	}
	start := time.Now()
	w.mu.Lock()
	ix, seq, source, err := w.cur.Load(), w.log.Last(), w.source.Load(), w.err
	if err == nil {
		err = w.log.Rotate()
	}
	refreshed := w.unsaved.Swap(false)
	w.mu.Unlock()
	if err != nil {
		w.unsaved.CompareAndSwap(false, refreshed)
		return err
	}
	if seq == w.written && !refreshed {
		return nil // nothing new
	}
	sum, err := ix.WriteTo(ctx, w.dir, w.liveState(seq, source), w.sum)
	if err != nil {
		w.unsaved.CompareAndSwap(false, refreshed)
		return fmt.Errorf("live: checkpoint of %s: %w", w.dir, err)
	}
	w.sum, w.written = sum, seq
	if err := w.log.Drop(seq); err != nil {
		return fmt.Errorf("live: checkpoint of %s: dropping the log's older segments: %w", w.dir, err)
	}
	d := time.Since(start)
	w.stats.checkpoints.Add(1)
	w.stats.ckNanos.Add(int64(d))
	w.stats.ckLastNanos.Store(int64(d))
	w.o.Logger.Info("checkpoint", "dir", w.dir, "seq", seq, "nodes", ix.Live(), "took", d.Round(time.Millisecond))
	return nil
}

// Stats describe a writer's state.
type Stats struct {
	Seq            uint64 // the last committed record
	Nodes          int
	LogSegments    int
	LogBytes       int64
	Commits        int64 // indexes published
	Batches        int64 // batches committed
	Checkpoints    int64
	CheckpointSecs float64 // all checkpoints together
	LastCheckpoint float64 // seconds
	Replayed       int64   // records replayed at open
	Refreshes      int64   // refreshes that published sections
	RefreshFailed  int64   // refreshes that failed or were overtaken by a commit
	RefreshSecs    float64 // all refreshes together
	Deleted        int     // passages deleted in place in the current index (Options.DeletedShare)
	Compactions    int64   // commits, refreshes and merges that renumbered the index without its deleted passages
	Merges         int64   // merges published (in the background past Options.MergeShare, by Refresh, or by Merge)
	MergeFailed    int64   // merges that failed or gave up (not those Close cancelled)
	MergeSecs      float64 // all published merges together
	Stale          *index.Stale
}

// Stats reports the writer's state.
func (w *Writer) Stats() Stats {
	ls := w.log.Stats()
	ix := w.Index()
	return Stats{Seq: ls.Last, Nodes: ix.Live(), LogSegments: ls.Segments, LogBytes: ls.Bytes,
		Commits: w.stats.commits.Load(), Batches: w.stats.batches.Load(), Checkpoints: w.stats.checkpoints.Load(),
		CheckpointSecs: time.Duration(w.stats.ckNanos.Load()).Seconds(), LastCheckpoint: time.Duration(w.stats.ckLastNanos.Load()).Seconds(),
		Replayed: w.stats.replayed.Load(), Refreshes: w.stats.refreshes.Load(), RefreshFailed: w.stats.refreshFailures.Load(),
		RefreshSecs: time.Duration(w.stats.rfNanos.Load()).Seconds(), Deleted: ix.Deleted(), Compactions: w.stats.compactions.Load(),
		Merges: w.stats.merges.Load(), MergeFailed: w.stats.mergeFailures.Load(), MergeSecs: time.Duration(w.stats.mergeNanos.Load()).Seconds(),
		Stale: ix.Meta.Stale}
}

// Close stops the writer: queued commits fail with ErrClosed, a final
// checkpoint folds the log into the index (unless the writer failed), and
// the log and the index are closed. Readers must be done with the
// writer's indexes.
func (w *Writer) Close() error {
	w.closeMu.Lock()
	defer w.closeMu.Unlock()
	if w.closed {
		return ErrClosed
	}
	w.closed = true
	w.rfCancel() // first: the refresh loop then stops quietly
	close(w.stop)
	<-w.done
	<-w.ckDone // a checkpoint in flight finishes first
	<-w.rfDone
	<-w.mgDone
	w.rfMu.Lock() // a Refresh call in flight has seen the cancel
	w.rfMu.Unlock()
	var err error
	if w.err == nil {
		err = w.Checkpoint(context.Background())
	}
	w.ckMu.Lock()
	defer w.ckMu.Unlock()
	w.logClosed = true
	return errors.Join(err, w.log.Close(), w.base.Close())
}

// A Gate admits as many holders at once as its capacity (a nil Gate admits
// all): the cores write work may take (Options.CPU).
type Gate chan struct{}

// NewGate admits n holders at once (n < 1: a nil Gate).
func NewGate(n int) Gate {
	if n < 1 {
		return nil
	}
	return make(Gate, n)
}

// Enter waits for a place.
func (g Gate) Enter() {
	if g != nil {
		g <- struct{}{}
	}
}

// bound is ctx for a commit's work: background, yielding its core to
// waiting goroutines (queries) as it goes, and with its parallel work held
// to one goroutine, the core a place at g stands for (a nil Gate: as
// many as there are cores).
func (g Gate) bound(ctx context.Context) context.Context {
	ctx = parallel.Background(ctx)
	if g == nil {
		return ctx
	}
	return parallel.WithWorkers(ctx, 1)
}

// Leave gives the place back.
func (g Gate) Leave() {
	if g != nil {
		<-g
	}
}
