package fleet

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/index/fleet/fleettest"
	"github.com/gleaner-rag/gleaner/index/indextest"
	"github.com/gleaner-rag/gleaner/index/live"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// testLog keeps a test's log lines, safe for concurrent writers.
type testLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *testLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newLogger() (*slog.Logger, *testLog) {
	var tl testLog
	return slog.New(slog.NewTextHandler(&tl, nil)), &tl
}

// baseIndex builds the small index every replica starts from.
func baseIndex(t *testing.T) string {
	c := synth.Generate(synth.Options{People: 40, Cities: 10, Countries: 4, Bands: 10, Queries: 4})
	return indextest.Build(t, c)
}

// otherIndex builds an index of other documents.
func otherIndex(t *testing.T) string {
	c := synth.Generate(synth.Options{People: 30, Cities: 8, Countries: 3, Bands: 6, Queries: 4, Seed: 9})
	return indextest.Build(t, c)
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// copyIndex copies the index folder src to a new folder.
func copyIndex(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "index")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func connect(t *testing.T, urls string, replicas int, extra ...nats.Option) *Conn {
	t.Helper()
	log, tl := newLogger()
	// The connection's log says why a snapshot was refused or a write
	// retried: shown when the test fails.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the connection's log:\n%s", tl)
		}
	})
	cfg := DefaultConfig(urls, log)
	cfg.Replicas = replicas
	cfg.Timeout = 3 * time.Second
	cfg.Extra = extra
	c, err := Connect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func openLog(t *testing.T, c *Conn) *Log {
	t.Helper()
	l, err := c.OpenLog(context.Background(), "docs.v1")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// replica is a live writer on its own copy of the index, following a log.
type replica struct {
	dir string
	w   *live.Writer
	r   *Replica
}

func openWriter(t *testing.T, dir string) *live.Writer {
	t.Helper()
	w, err := writerAt(dir)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func writerAt(dir string) (*live.Writer, error) {
	log, _ := newLogger()
	o := live.DefaultOptions(log)
	o.Refresh.Backend = cpu.New()
	return live.Open(context.Background(), dir, o)
}

func follow(t *testing.T, l *Log, dir string) *replica {
	t.Helper()
	w := openWriter(t, dir)
	log, _ := newLogger()
	o := DefaultFollowOptions(log)
	o.Retry = 100 * time.Millisecond
	r, err := Follow(context.Background(), l, w, o)
	if err != nil {
		w.Close()
		t.Fatal(err)
	}
	rep := &replica{dir: dir, w: w, r: r}
	t.Cleanup(rep.close)
	return rep
}

func (rp *replica) close() {
	if rp.r != nil {
		rp.r.Close()
		rp.r = nil
	}
	if rp.w != nil {
		rp.w.Close()
		rp.w = nil
	}
}

// model is what the documents should be after the log's batches, applied
// all or nothing in the log's order: an independent account of the
// replicas' catalog.
type model map[string]string

type change struct {
	kind, id, text string
}

func (m model) apply(cs []change) error {
	next := model{}
	for k, v := range m {
		next[k] = v
	}
	for _, c := range cs {
		_, ok := next[c.id]
		switch {
		case c.kind == "add" && ok:
			return live.ErrExists
		case c.kind == "delete" && !ok:
			return live.ErrNotFound
		case c.kind == "delete":
			delete(next, c.id)
		default:
			next[c.id] = c.text
		}
	}
	for k := range m {
		delete(m, k)
	}
	for k, v := range next {
		m[k] = v
	}
	return nil
}

func batchOf(cs []change) *live.Batch {
	var b live.Batch
	for _, c := range cs {
		switch c.kind {
		case "add":
			b.Add(live.NodeDocument(corpus.Node{ID: c.id, Title: "T " + c.id, Text: c.text}))
		case "replace":
			b.Replace(live.NodeDocument(corpus.Node{ID: c.id, Title: "T " + c.id, Text: c.text}))
		case "delete":
			b.Delete(c.id)
		}
	}
	return &b
}

var words = []string{"quokka", "zanzibar", "fjord", "basalt", "orchid", "lantern", "meridian", "cobalt", "tundra", "saffron"}

// randomChanges draws a batch of 1–3 changes over a small id space, so
// that adds of existing ids and deletes of missing ones happen (refused).
func randomChanges(rng *rand.Rand) []change {
	cs := make([]change, 1+rng.IntN(3))
	for i := range cs {
		id := fmt.Sprintf("live-%d", rng.IntN(40))
		text := ""
		for j := 0; j < 6; j++ {
			text += words[rng.IntN(len(words))] + " "
		}
		cs[i] = change{kind: []string{"add", "add", "replace", "delete"}[rng.IntN(4)], id: id, text: text}
	}
	return cs
}

// writer publishes n seeded batches and records each acknowledged one
// by its sequence.
type published struct {
	mu    sync.Mutex
	bySeq map[uint64][]change
}

func (p *published) publish(t *testing.T, l *Log, seed uint64, n int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	for i := 0; i < n; i++ {
		cs := randomChanges(rng)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		seq, err := l.Publish(ctx, batchOf(cs))
		cancel()
		if err != nil {
			t.Errorf("publish %d of writer %d: %v", i, seed, err)
			return
		}
		p.mu.Lock()
		if _, dup := p.bySeq[seq]; dup {
			t.Errorf("two publishes acknowledged as %d", seq)
		}
		p.bySeq[seq] = cs
		p.mu.Unlock()
	}
}

// waitFor waits until n publishes were acknowledged.
func (p *published) waitFor(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		p.mu.Lock()
		got := len(p.bySeq)
		p.mu.Unlock()
		if got >= n {
			return
		}
	}
	t.Fatalf("fewer than %d publishes acknowledged in a minute", n)
}

// streamLeader is the node that leads the log's stream.
func streamLeader(t *testing.T, l *Log) int {
	t.Helper()
	info, err := l.stream.Info(context.Background())
	if err != nil || info.Cluster == nil {
		t.Fatalf("stream info: %v", err)
	}
	var n int
	if _, err := fmt.Sscanf(info.Cluster.Leader, "n%d", &n); err != nil {
		t.Fatalf("leader %q: %v", info.Cluster.Leader, err)
	}
	return n - 1
}

// expected replays the acknowledged batches in log order on the model,
// and returns it and each batch's expected refusal.
func (p *published) expected(t *testing.T, base model) (model, map[uint64]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var seqs []uint64
	for s := range p.bySeq {
		seqs = append(seqs, s)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	refused := map[uint64]bool{}
	for _, s := range seqs {
		refused[s] = base.apply(p.bySeq[s]) != nil
	}
	return base, refused
}

// waitApplied waits until every replica has taken batch seq.
func waitApplied(t *testing.T, seq uint64, rs ...*replica) {
	t.Helper()
	for _, rp := range rs {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		_, err := rp.r.Wait(ctx, seq)
		cancel()
		if err != nil {
			t.Fatalf("replica %s: waiting for %d (applied %d): %v", rp.dir, seq, rp.r.Applied(), err)
		}
	}
}

// checkModel checks that the replica holds exactly the model's live
// documents, with their texts.
func checkModel(t *testing.T, rp *replica, m model) {
	t.Helper()
	ix := rp.w.Index()
	for i := 0; i < 40; i++ {
		id := fmt.Sprintf("live-%d", i)
		v, ok := ix.Lookup(id)
		want, wantOK := m[id]
		if ok != wantOK {
			t.Errorf("replica %s: document %s present %v, want %v", rp.dir, id, ok, wantOK)
			continue
		}
		if ok && ix.Text(int(v)) != want {
			t.Errorf("replica %s: document %s text %q, want %q", rp.dir, id, ix.Text(int(v)), want)
		}
	}
}

// sameAs checks that each replica holds the model's documents and the
// first replica's fingerprint.
func sameAs(t *testing.T, m model, first *replica, others ...*replica) {
	t.Helper()
	want := fingerprint(t, first)
	for _, rp := range append([]*replica{first}, others...) {
		if m != nil {
			checkModel(t, rp, m)
		}
		if rp != first {
			if got := fingerprint(t, rp); got != want {
				t.Errorf("replica %s differs from %s:\n%s\n%s", rp.dir, first.dir, got, want)
			}
		}
	}
}

// fingerprint is the manifest checksum of the replica's index written
// out as a snapshot would be, and its BM25 top-10 for fixed queries.
func fingerprint(t *testing.T, rp *replica) string {
	t.Helper()
	out, err := Fingerprint(context.Background(), rp.w, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ix := rp.w.Index()
	m, err := retrieve.NewNamed("bm25", ix, retrieve.Env{Backend: cpu.New()})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"quokka fjord", "orchid lantern cobalt", "born city band"} {
		rs, err := m.Retrieve(context.Background(), retrieve.Query{Text: q}, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			out += fmt.Sprintf(" %s:%.6f", ix.NodeID(int(r.Index)), r.Score)
		}
	}
	return out
}

// TestReplicasStayIdentical: writers publish concurrently through a
// 3-node cluster; two replicas end with the documents of the log's
// order, each batch's refusal as the model decides it, and identical
// indexes.
func TestReplicasStayIdentical(t *testing.T) {
	cl := fleettest.Start(t, 3)
	base := baseIndex(t)
	l := openLog(t, connect(t, cl.URLs(), 3))
	a := follow(t, l, copyIndex(t, base))
	b := follow(t, openLog(t, connect(t, cl.URL(2), 3)), copyIndex(t, base))
	p := &published{bySeq: map[uint64][]change{}}
	var wg sync.WaitGroup
	for s := uint64(1); s <= 4; s++ {
		wg.Add(1)
		go func() { defer wg.Done(); p.publish(t, l, s, 50) }()
	}
	wg.Wait()
	_, last, err := l.Bounds(context.Background())
	if err != nil || last != 200 {
		t.Fatalf("log ends at %d (%v), want 200 batches", last, err)
	}
	waitApplied(t, last, a, b)
	m, refused := p.expected(t, model{})
	sameAs(t, m, a, b)
	nRefused := 0
	for seq, want := range refused {
		got, err := a.r.Wait(context.Background(), seq)
		if err != nil || (got != nil) != want {
			t.Errorf("batch %d: refusal %v (%v), want refused %v", seq, got, err, want)
		}
		if want {
			nRefused++
		}
	}
	if nRefused == 0 || nRefused == len(refused) {
		t.Fatalf("%d of %d batches refused: the test needs both kinds", nRefused, len(refused))
	}
}

// TestNodeKilledDuringWrites: a NATS node dies while writers publish and
// comes back; every acknowledged write is on both replicas, in the log's
// order.
func TestNodeKilledDuringWrites(t *testing.T) {
	cl := fleettest.Start(t, 3)
	base := baseIndex(t)
	l := openLog(t, connect(t, cl.URLs(), 3))
	a := follow(t, l, copyIndex(t, base))
	b := follow(t, openLog(t, connect(t, cl.URLs(), 3)), copyIndex(t, base))
	p := &published{bySeq: map[uint64][]change{}}
	var wg sync.WaitGroup
	for s := uint64(1); s <= 3; s++ {
		wg.Add(1)
		go func() { defer wg.Done(); p.publish(t, l, 10+s, 60) }()
	}
	// Kill the stream's leader once writes are under way; writes go on
	// while it is down; then it comes back.
	p.waitFor(t, 30)
	leader := streamLeader(t, l)
	cl.Kill(leader)
	p.waitFor(t, 90)
	if err := cl.Restart(leader); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	_, last, err := l.Bounds(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := len(p.bySeq); uint64(got) != last {
		t.Fatalf("%d acknowledged batches, log ends at %d: a publish was stored twice or lost", got, last)
	}
	waitApplied(t, last, a, b)
	m, _ := p.expected(t, model{})
	sameAs(t, m, a, b)
}

// TestPartitionAndHeal: a replica cut off from the cluster falls behind
// while writes go on, and catches up once healed.
func TestPartitionAndHeal(t *testing.T) {
	cl := fleettest.Start(t, 3)
	base := baseIndex(t)
	l := openLog(t, connect(t, cl.URLs(), 3))
	a := follow(t, l, copyIndex(t, base))
	px := fleettest.NewProxy(t, cl.URL(1)[len("nats://"):])
	b := follow(t, openLog(t, connect(t, px.URL(), 3, nats.IgnoreDiscoveredServers(), nats.DontRandomize())), copyIndex(t, base))
	p := &published{bySeq: map[uint64][]change{}}
	p.publish(t, l, 21, 20)
	waitApplied(t, 20, a, b)
	px.Cut()
	p.publish(t, l, 22, 40)
	waitApplied(t, 60, a)
	time.Sleep(300 * time.Millisecond)
	if got := b.r.Applied(); got != 20 {
		t.Fatalf("the cut-off replica took up to %d, want 20", got)
	}
	px.Heal()
	waitApplied(t, 60, b)
	m, _ := p.expected(t, model{})
	sameAs(t, m, a, b)
}

// TestFreshReplicaFromSnapshot: a replica that joins mid-stream restores
// the newest snapshot and replays the log from it; the log trimmed
// behind the snapshot stops a replica further behind with ErrBehind.
func TestFreshReplicaFromSnapshot(t *testing.T) {
	cl := fleettest.Start(t, 3)
	base := baseIndex(t)
	l := openLog(t, connect(t, cl.URLs(), 3))
	a := follow(t, l, copyIndex(t, base))
	p := &published{bySeq: map[uint64][]change{}}
	p.publish(t, l, 31, 30)
	waitApplied(t, 30, a)
	s, err := l.PutSnapshot(context.Background(), a.w, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if s.Seq != 30 {
		t.Fatalf("snapshot at %d, want 30", s.Seq)
	}
	p.publish(t, l, 32, 30)
	dir := filepath.Join(t.TempDir(), "fresh")
	got, err := l.Restore(context.Background(), dir)
	if err != nil || got.Seq != 30 {
		t.Fatalf("restore: %+v, %v", got, err)
	}
	if _, err := l.Restore(context.Background(), dir); err == nil {
		t.Error("a restore over an existing folder was not refused")
	}
	c := follow(t, l, dir)
	waitApplied(t, 60, a, c)
	m, _ := p.expected(t, model{})
	sameAs(t, m, a, c)
	// Trim behind the snapshot: a replica from the first index is behind.
	if _, err := l.Trim(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := l.Bounds(context.Background()); first != 31 {
		t.Errorf("the log starts at %d after the trim, want 31", first)
	}
	w := openWriter(t, copyIndex(t, base))
	defer w.Close()
	log, _ := newLogger()
	if _, err := Follow(context.Background(), l, w, DefaultFollowOptions(log)); !errors.Is(err, ErrBehind) {
		t.Errorf("following from the start after a trim: %v, want ErrBehind", err)
	}
}

// oneNode is a one-node cluster's connection and log, a replica of the
// base index following it, and the record of what is published.
func oneNode(t *testing.T) (*Conn, *Log, *replica, *published) {
	t.Helper()
	cl := fleettest.Start(t, 1)
	conn := connect(t, cl.URLs(), 1)
	l := openLog(t, conn)
	return conn, l, follow(t, l, copyIndex(t, baseIndex(t))), &published{bySeq: map[uint64][]change{}}
}

// TestCorruptSnapshotRefused: a snapshot whose stored bytes were altered
// is refused, and the next older one restored; with none left, Restore
// fails and writes nothing.
func TestCorruptSnapshotRefused(t *testing.T) {
	conn, l, a, p := oneNode(t)
	p.publish(t, l, 41, 10)
	waitApplied(t, 10, a)
	if _, err := l.PutSnapshot(context.Background(), a.w, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	p.publish(t, l, 42, 10)
	waitApplied(t, 20, a)
	newest, err := l.PutSnapshot(context.Background(), a.w, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	corruptObject(t, conn, l, newest.Name)
	dir := filepath.Join(t.TempDir(), "restored")
	got, err := l.Restore(context.Background(), dir)
	if err != nil || got.Seq != 10 {
		t.Fatalf("restore with the newest snapshot corrupt: %+v, %v; want the one at 10", got, err)
	}
	// Only the corrupt one left.
	if _, err := l.Trim(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	dir2 := filepath.Join(t.TempDir(), "restored2")
	if _, err := l.Restore(context.Background(), dir2); err == nil {
		t.Fatal("a corrupt snapshot was restored")
	}
	if _, err := os.Stat(dir2); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused restore left %s behind: %v", dir2, err)
	}
}

// TestUnfinishedUploadsNeverListed: an upload that a killed process left
// unnamed is neither listed nor restored; Trim deletes it once a
// snapshot at least as new is kept, and leaves a newer one. A second
// snapshot of the same batch leaves the first standing and nothing
// behind.
func TestUnfinishedUploadsNeverListed(t *testing.T) {
	ctx := context.Background()
	conn, l, a, p := oneNode(t)
	p.publish(t, l, 81, 10)
	waitApplied(t, 10, a)
	first, err := l.PutSnapshot(ctx, a.w, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	again, err := l.PutSnapshot(ctx, a.w, t.TempDir())
	if err != nil || again.Name != first.Name || again.Checksum != first.Checksum {
		t.Fatalf("a second snapshot at 10: %+v, %v; want the first standing, %+v", again, err, first)
	}
	abandon := func(seq uint64) string {
		name := pendingName(seq)
		if _, err := l.objs.PutBytes(ctx, name, []byte("the first bytes of a tar")); err != nil {
			t.Fatal(err)
		}
		return name
	}
	abandon(15)
	newer := abandon(40)
	if snaps, err := l.Snapshots(ctx); err != nil || len(snaps) != 1 || snaps[0].Seq != 10 {
		t.Fatalf("snapshots listed: %+v, %v; want the one at 10", snaps, err)
	}
	if got, err := l.Restore(ctx, filepath.Join(t.TempDir(), "restored")); err != nil || got.Seq != 10 {
		t.Fatalf("restore: %+v, %v; want the snapshot at 10", got, err)
	}
	p.publish(t, l, 82, 10)
	waitApplied(t, 20, a)
	last, err := l.PutSnapshot(ctx, a.w, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// A process killed between a rename's two steps leaves the upload's
	// name beside the snapshot's, on the same bytes: the trim keeps it.
	oldName := pendingName(last.Seq)
	nameAlso(t, conn, l, last.Name, oldName)
	if _, err := l.Trim(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got, err := l.Restore(ctx, filepath.Join(t.TempDir(), "after-trim")); err != nil || got.Seq != 20 {
		t.Fatalf("restore after the trim: %+v, %v; want the snapshot at 20", got, err)
	}
	infos, err := l.objs.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range infos {
		names = append(names, in.Name)
	}
	slices.Sort(names)
	want := []string{last.Name, newer, oldName}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("the store holds %q after the trim, want %q", names, want)
	}
}

// nameAlso stores the record of object from under the name to as well,
// on the same bytes: the first of UpdateMeta's two steps.
func nameAlso(t *testing.T, c *Conn, l *Log, from, to string) {
	t.Helper()
	ctx := context.Background()
	info, err := l.objs.GetInfo(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	info.Name, info.ModTime = to, time.Time{}
	data, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	msg := nats.NewMsg(fmt.Sprintf("$O.%s.M.%s", bucketName(l.index), base64.URLEncoding.EncodeToString([]byte(to))))
	msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	msg.Data = data
	if _, err := c.js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreWaitsForALaggingNode: a node that has not caught up with a
// snapshot just stored answers that it is missing, then that its bytes
// do not match its digest; Restore reads it again rather than refusing
// it for an older one.
func TestRestoreWaitsForALaggingNode(t *testing.T) {
	_, l, a, p := oneNode(t)
	for i, want := range []uint64{10, 20} {
		p.publish(t, l, 71+uint64(i), 10)
		waitApplied(t, want, a)
		if _, err := l.PutSnapshot(context.Background(), a.w, t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	lag := &laggingStore{ObjectStore: l.objs, fail: []error{jetstream.ErrObjectNotFound, jetstream.ErrDigestMismatch}}
	l.objs = lag
	got, err := l.Restore(context.Background(), filepath.Join(t.TempDir(), "restored"))
	if err != nil || got.Seq != 20 {
		t.Fatalf("restore from a lagging node: %+v, %v; want the newest, at 20", got, err)
	}
	if len(lag.fail) != 0 {
		t.Errorf("%d of the lagging answers were never given", len(lag.fail))
	}
}

// laggingStore answers its first reads with fail's errors in turn: a
// missing object at Get, a digest mismatch at the first Read.
type laggingStore struct {
	jetstream.ObjectStore
	fail []error
}

func (s *laggingStore) Get(ctx context.Context, name string, opts ...jetstream.GetObjectOpt) (jetstream.ObjectResult, error) {
	res, err := s.ObjectStore.Get(ctx, name, opts...)
	if err != nil || len(s.fail) == 0 {
		return res, err
	}
	fail := s.fail[0]
	s.fail = s.fail[1:]
	if errors.Is(fail, jetstream.ErrObjectNotFound) {
		res.Close()
		return nil, fail
	}
	return &failingResult{ObjectResult: res, err: fail}, nil
}

type failingResult struct {
	jetstream.ObjectResult
	err error
}

func (r *failingResult) Read([]byte) (int, error) { return 0, r.err }

// corruptObject replaces the first chunk of a stored object with bytes
// of the same length, one flipped: what a disk or a hand could do.
func corruptObject(t *testing.T, c *Conn, l *Log, name string) {
	t.Helper()
	ctx := context.Background()
	info, err := l.objs.GetInfo(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	chunks := fmt.Sprintf("$O.%s.C.%s", bucketName(l.index), info.NUID)
	st, err := c.js.Stream(ctx, "OBJ_"+bucketName(l.index))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := st.GetLastMsgForSubject(ctx, chunks)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Clone(msg.Data)
	data[len(data)/2] ^= 0xff
	if err := st.DeleteMsg(ctx, msg.Sequence); err != nil {
		t.Fatal(err)
	}
	if _, err := c.js.Publish(ctx, chunks, data); err != nil {
		t.Fatal(err)
	}
	// Reading it now fails its digest.
	res, err := l.objs.Get(ctx, name)
	if err == nil {
		_, err = io.Copy(io.Discard, res)
		res.Close()
	}
	if err == nil {
		t.Fatal("the object store did not notice the altered chunk")
	}
}
