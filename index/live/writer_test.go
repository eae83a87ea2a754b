package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/indextest"
	"github.com/gleaner-rag/gleaner/internal/strtab"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
)

func testOptions(t *testing.T) (Options, *bytes.Buffer) {
	var logs bytes.Buffer
	o := DefaultOptions(slog.New(slog.NewTextHandler(&logs, nil)))
	o.Refresh.Backend = cpu.New()
	return o, &logs
}

func smallIndex(t *testing.T) string {
	c := synth.Generate(synth.Options{People: 40, Cities: 10, Countries: 4, Bands: 10, Queries: 4})
	return indextest.Build(t, c)
}

// mustOpen opens the index at dir for updates.
// smallWriter is a writer over a fresh small index, closed when the test
// ends.
func smallWriter(t *testing.T) *Writer {
	o, _ := testOptions(t)
	w := mustOpen(t, smallIndex(t), o)
	t.Cleanup(func() { w.Close() })
	return w
}

func mustOpen(t *testing.T, dir string, o Options) *Writer {
	t.Helper()
	w, err := Open(context.Background(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func passage(id, text string) Document {
	return NodeDocument(corpus.Node{ID: id, Title: "T " + id, Text: text})
}

func commit(t *testing.T, w *Writer, b *Batch) Result {
	t.Helper()
	r, err := w.Commit(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCommitReplaceDeleteReopen(t *testing.T) {
	dir := smallIndex(t)
	o, _ := testOptions(t)
	w := mustOpen(t, dir, o)
	n0 := w.Index().N()
	victim := w.Index().NodeID(3)
	var b Batch
	b.Add(passage("new-1", "zanzibar quokka festival"))
	b.Add(Document{ID: "doc-2", Nodes: []corpus.Node{
		{ID: "doc-2#0", Doc: "doc-2", Text: "first part about quokka"},
		{ID: "doc-2#1", Doc: "doc-2", Text: "second part about zanzibar"}},
		Edges: []corpus.Edge{{Src: "doc-2#1", Dst: "new-1", Kind: "links"}}})
	b.Delete(victim)
	r := commit(t, w, &b)
	if r.Seq != 1 || r.Nodes != n0+2 {
		t.Fatalf("result %+v, want seq 1 and %d nodes", r, n0+2)
	}
	ix := w.Index()
	if _, ok := ix.Lookup(victim); ok {
		t.Fatalf("deleted %q still in the index", victim)
	}
	if hits := ix.BM25.Search("quokka", 5); len(hits) != 2 {
		t.Fatalf("bm25 quokka: %v, want the 2 added passages", hits)
	}
	b = Batch{}
	b.Replace(passage("new-1", "now about wombats"))
	commit(t, w, &b)
	if hits := w.Index().BM25.Search("wombats", 5); len(hits) != 1 || w.Index().NodeID(int(hits[0].Index)) != "new-1" {
		t.Fatalf("after replace: %v", hits)
	}
	if !hasEdge(w.Index(), "doc-2#1", "new-1") {
		t.Fatal("the edge into a replaced passage was lost")
	}
	want := snapshotOf(w.Index())
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(LogDir(dir)); st == nil {
		t.Fatal("no log folder")
	}
	back := indextest.Open(t, dir)
	if got := snapshotOf(back); !reflect.DeepEqual(got, want) {
		t.Fatal("the checkpointed index differs from the writer's last")
	}
	if back.Meta.Live == nil || back.Meta.Live.Seq != 2 {
		t.Fatalf("live state %+v, want seq 2", back.Meta.Live)
	}
}

func hasEdge(ix *index.Index, src, dst string) bool {
	u, ok1 := ix.Lookup(src)
	v, ok2 := ix.Lookup(dst)
	if !ok1 || !ok2 {
		return false
	}
	g := &ix.Graph().Out
	for p := g.Ptr[u]; p < g.Ptr[u+1]; p++ {
		if g.Idx[p] == v {
			return true
		}
	}
	return false
}

// snapshotOf summarises what an index serves: nodes, postings, vectors.
// snapshotOf is what ix holds, compacted (a live index deletes in place,
// an index on disk never holds deleted nodes).
func snapshotOf(ix *index.Index) []any {
	ix, err := ix.Compact(context.Background())
	if err != nil {
		panic(err)
	}
	var ids []string
	for i := range ix.N() {
		ids = append(ids, ix.NodeID(i)+"|"+ix.Text(i))
	}
	return []any{ids, ix.Postings.Flat(), ix.Vectors, ix.Meta.Edges}
}

// TestReplayAfterCrash abandons a writer without a checkpoint (as kill -9
// would) and reopens: the log brings the index back to the last commit.
func TestReplayAfterCrash(t *testing.T) {
	dir := smallIndex(t)
	o, logs := testOptions(t)
	w := mustOpen(t, dir, o)
	for i := range 20 {
		var b Batch
		b.Add(passage(fmt.Sprintf("p%d", i), fmt.Sprintf("text number %d about lemurs", i)))
		if i%3 == 2 {
			b.Delete(fmt.Sprintf("p%d", i-1))
		}
		commit(t, w, &b)
	}
	want := snapshotOf(w.Index())
	w.crash()
	w2, err := Open(context.Background(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if got := snapshotOf(w2.Index()); !reflect.DeepEqual(got, want) {
		t.Fatal("replayed index differs from the one before the crash")
	}
	if st := w2.Stats(); st.Replayed != 20 || st.Seq != 20 {
		t.Fatalf("stats %+v, want 20 replayed", st)
	}
	if !bytes.Contains(logs.Bytes(), []byte("replayed the update log")) {
		t.Error("replay not logged")
	}
}

// crash stops the writer as kill -9 would: no checkpoint, files closed.
func (w *Writer) crash() {
	close(w.stop)
	<-w.done
	w.ckMu.Lock()
	w.log.Close()
	w.base.Close()
}

func TestBatchIsAtomic(t *testing.T) {
	w := smallWriter(t)
	existing := w.Index().NodeID(0)
	before := snapshotOf(w.Index())
	for name, tc := range map[string]struct {
		fill func(*Batch)
		want error
	}{
		"add existing":   {func(b *Batch) { b.Add(passage("ok", "fine")); b.Add(passage(existing, "x")) }, ErrExists},
		"delete missing": {func(b *Batch) { b.Add(passage("ok", "fine")); b.Delete("nope") }, ErrNotFound},
		"delete twice":   {func(b *Batch) { b.Delete(existing); b.Delete(existing) }, ErrNotFound},
		"edge to nothing": {func(b *Batch) {
			d := passage("ok", "fine")
			d.Edges = []corpus.Edge{{Src: "ok", Dst: "nope"}}
			b.Add(d)
		}, nil},
		"foreign edge": {func(b *Batch) {
			d := passage("ok", "fine")
			d.Edges = []corpus.Edge{{Src: existing, Dst: "ok"}}
			b.Add(d)
		}, nil},
		"edge kind not UTF-8": {func(b *Batch) {
			d := passage("ok", "fine")
			d.Edges = []corpus.Edge{{Src: "ok", Dst: existing, Kind: "links\xff"}}
			b.Add(d)
		}, nil},
		"wrong document":    {func(b *Batch) { b.Add(Document{ID: "d", Nodes: []corpus.Node{{ID: "x", Text: "t"}}}) }, nil},
		"empty document":    {func(b *Batch) { b.Add(Document{ID: "d"}) }, nil},
		"empty text":        {func(b *Batch) { b.Add(NodeDocument(corpus.Node{ID: "e", Text: " "})) }, nil},
		"bad vectors":       {func(b *Batch) { d := passage("v", "t"); d.Vectors = []float32{1}; b.Add(d) }, nil},
		"passage as doc id": {func(b *Batch) { b.Add(Document{ID: "z", Nodes: []corpus.Node{{ID: existing, Doc: "z", Text: "t"}}}) }, ErrExists},
		"id with a newline": {func(b *Batch) { b.Add(passage("a\nb", "text")) }, corpus.ErrMalformed},
		"id with a NUL":     {func(b *Batch) { b.Add(passage("a\x00b", "text")) }, corpus.ErrMalformed},
		"id with a space":   {func(b *Batch) { b.Add(passage("a b", "text")) }, corpus.ErrMalformed},
		"document id with a tab": {func(b *Batch) {
			b.Add(Document{ID: "d\t", Nodes: []corpus.Node{{ID: "n", Doc: "d\t", Text: "t"}}})
		}, corpus.ErrMalformed},
		"a record over the limit": {func(b *Batch) { b.Add(passage("big", strings.Repeat("word ", corpus.MaxRecordBytes/5+1))) }, corpus.ErrMalformed},
	} {
		var b Batch
		tc.fill(&b)
		_, err := w.Commit(context.Background(), &b)
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v, want an error (%v)", name, err, tc.want)
		}
	}
	if !reflect.DeepEqual(snapshotOf(w.Index()), before) || w.Stats().Seq != 0 {
		t.Fatal("a failed batch changed the index or the log")
	}
}

// A document added twice in one batch is refused as the batch's own
// repetition, not as one the index already holds; and edges without a
// kind (a corpus's plain edges) can be added again after the first.
func TestBatchRepeatsAndPlainEdges(t *testing.T) {
	w := smallWriter(t)
	existing := w.Index().NodeID(0)
	var twice Batch
	twice.Add(passage("p1", "one"))
	twice.Add(passage("p1", "two"))
	_, err := w.Commit(context.Background(), &twice)
	if err == nil || errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "earlier change of this batch") {
		t.Fatalf("a document added twice in a batch: %v", err)
	}
	for i, id := range []string{"e1", "e2"} {
		d := passage(id, "plain edge")
		d.Edges = []corpus.Edge{{Src: id, Dst: existing}}
		var b Batch
		b.Add(d)
		if _, err := w.Commit(context.Background(), &b); err != nil {
			t.Fatalf("kind-less edge %d: %v", i+1, err)
		}
	}
	if w.Index().DerivedKind("") {
		t.Fatal("the kind-less edges count as a kind gleaner derives")
	}
}

// TestConcurrentCommits commits from many goroutines while others read:
// every acknowledged passage is in the index, and each read sees a whole
// index (run with -race).
func TestConcurrentCommits(t *testing.T) {
	dir := smallIndex(t)
	o, _ := testOptions(t)
	o.CheckpointBytes = 4 << 10 // checkpoints while commits go on
	w := mustOpen(t, dir, o)
	var wg sync.WaitGroup
	const writers, each = 4, 15
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				var b Batch
				b.Add(passage(fmt.Sprintf("g%d-%d", g, i), fmt.Sprintf("concurrent passage %d of writer %d", i, g)))
				if _, err := w.Commit(context.Background(), &b); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	stop := make(chan struct{})
	var rg sync.WaitGroup
	rg.Add(1)
	go func() {
		defer rg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ix := w.Index()
			if hits := ix.BM25.Search("concurrent passage", 3); len(hits) > 0 && int(hits[0].Index) >= ix.N() {
				t.Error("hit outside the index")
			}
		}
	}()
	wg.Wait()
	close(stop)
	rg.Wait()
	ix := w.Index()
	for g := range writers {
		for i := range each {
			if _, ok := ix.Lookup(fmt.Sprintf("g%d-%d", g, i)); !ok {
				t.Fatalf("acknowledged passage g%d-%d missing", g, i)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	back, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if back.N() != ix.N() {
		t.Fatalf("reopened: %d nodes, want %d", back.N(), ix.N())
	}
}

// TestForeignLogRefused rebuilds the index under a log with records: the
// writer refuses to replay them onto the new index.
func TestForeignLogRefused(t *testing.T) {
	dir := smallIndex(t)
	o, _ := testOptions(t)
	w := mustOpen(t, dir, o)
	var b Batch
	b.Add(passage("x", "text"))
	commit(t, w, &b)
	w.crash()
	c := synth.Generate(synth.Options{People: 12, Cities: 4, Countries: 2, Bands: 4, Queries: 2})
	if err := index.Build(context.Background(), c, dir, index.WithoutHead()); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), dir, o); err == nil || !bytes.Contains([]byte(err.Error()), []byte("does not belong")) {
		t.Fatalf("open over a rebuilt index: %v", err)
	}
	os.RemoveAll(LogDir(dir))
	mustOpen(t, dir, o).Close()
}

// TestOptionsChecked refuses options that are not set, and commits with
// a minimum interval between commits.
func TestOptionsChecked(t *testing.T) {
	dir := smallIndex(t)
	o, _ := testOptions(t)
	for name, mut := range map[string]func(*Options){
		"no logger":           func(o *Options) { o.Logger = nil },
		"zero checkpoint":     func(o *Options) { o.CheckpointBytes = 0 },
		"zero group":          func(o *Options) { o.MaxGroup = 0 },
		"huge group":          func(o *Options) { o.MaxGroup = 1 << 40 },
		"negative interval":   func(o *Options) { o.MinInterval = -1 },
		"negative refresh":    func(o *Options) { o.RefreshAfter = -1 },
		"zero share":          func(o *Options) { o.ApplyShare = 0 },
		"negative workers":    func(o *Options) { o.Refresh.Workers = -1 },
		"tiny share":          func(o *Options) { o.ApplyShare = 1e-9 },
		"share over 1":        func(o *Options) { o.ApplyShare = 1.5 },
		"NaN share":           func(o *Options) { o.ApplyShare = math.NaN() },
		"refresh, no backend": func(o *Options) { o.RefreshAfter, o.Refresh.Backend = time.Second, nil },
	} {
		bad := o
		mut(&bad)
		if _, err := Open(context.Background(), dir, bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	o.MinInterval = 5 * time.Millisecond
	w := mustOpen(t, dir, o)
	defer w.Close()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3 {
				var b Batch
				b.Add(passage(fmt.Sprintf("m%d-%d", g, i), "interval test"))
				commit(t, w, &b)
			}
		}()
	}
	wg.Wait()
	if st := w.Stats(); st.Batches != 12 || st.Nodes != w.base.N()+12 {
		t.Fatalf("stats %+v, want 12 batches", st)
	}
}

// TestGroupingKeepsTheGraph commits the same changes one batch at a time
// and as one batch: a document deleted and later re-added loses the
// edges into it either way; a replaced one keeps them either way.
func TestGroupingKeepsTheGraph(t *testing.T) {
	edgesAfter := func(batches []*Batch) []string {
		dir := smallIndex(t)
		o, _ := testOptions(t)
		w, err := Open(context.Background(), dir, o)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		for _, b := range batches {
			commit(t, w, b)
		}
		ix := w.Index()
		var out []string
		g := &ix.Graph().Out
		for u := range ix.N() {
			for p := g.Ptr[u]; p < g.Ptr[u+1]; p++ {
				out = append(out, ix.NodeID(u)+"→"+ix.NodeID(int(g.Idx[p])))
			}
		}
		slices.Sort(out)
		return out
	}
	dir := smallIndex(t)
	ix := indextest.Open(t, dir)
	g := &ix.Graph().In
	x, y := -1, -1 // two nodes with incoming edges
	for v := range ix.N() {
		if g.Ptr[v+1] > g.Ptr[v] {
			if x < 0 {
				x = v
			} else if y < 0 {
				y = v
			}
		}
	}
	xd, yd := NodeDocument(corpus.Node{ID: ix.NodeID(x), Title: ix.Title(x), Text: ix.Text(x)}), NodeDocument(corpus.Node{ID: ix.NodeID(y), Title: ix.Title(y), Text: "replaced " + ix.Text(y)})
	var del, add, rep, all Batch
	del.Delete(xd.ID)
	add.Add(xd)
	rep.Replace(yd)
	all.Delete(xd.ID)
	all.Add(xd)
	all.Replace(yd)
	one, grouped := edgesAfter([]*Batch{&del, &add, &rep}), edgesAfter([]*Batch{&all})
	if !slices.Equal(one, grouped) {
		t.Fatalf("one by one: %d edges; in one batch: %d", len(one), len(grouped))
	}
	if len(one) >= int(ix.Meta.Edges) || !slices.ContainsFunc(one, func(e string) bool { return strings.HasSuffix(e, "→"+yd.ID) }) {
		t.Fatalf("%d edges of %d: want those into %q gone and those into %q kept", len(one), ix.Meta.Edges, xd.ID, yd.ID)
	}
}

// TestRefusedBeforeTheLog refuses changes that could not be applied, so
// they never reach the log: the last passage deleted, non-finite vectors.
func TestRefusedBeforeTheLog(t *testing.T) {
	w := smallWriter(t)
	var all Batch
	ix := w.Index()
	seen := map[string]bool{}
	for v := range ix.N() {
		if d := ix.Document(v); !seen[d] {
			seen[d] = true
			all.Delete(d)
		}
	}
	if _, err := w.Commit(context.Background(), &all); err == nil || !IsInvalid(err) {
		t.Fatalf("deleting every passage: %v", err)
	}
	bad := passage("nan", "text")
	bad.Vectors = make([]float32, ix.Meta.Dims)
	bad.Vectors[0] = float32(math.NaN())
	var b Batch
	b.Add(bad)
	if _, err := w.Commit(context.Background(), &b); err == nil || !IsInvalid(err) {
		t.Fatalf("a NaN vector: %v", err)
	}
	if st := w.Stats(); st.Seq != 0 || st.Nodes != ix.N() {
		t.Fatalf("refused changes reached the log or the index: %+v", st)
	}
}

// A batch built from strings of an index in memory (ids and titles read
// from w.Index()) leaves the writer holding none of them: the catalog
// keeps its own copies, so that index can go once it is replaced.
func TestWriterKeepsNoCallerStrings(t *testing.T) {
	w := smallWriter(t)
	var b Batch
	b.Add(passage("k-1", "first in memory"))
	commit(t, w, &b)
	ix := w.Index() // in memory now (applied)
	id, title := ix.NodeID(ix.N()-1), ix.Title(ix.N()-1)
	var b2 Batch
	b2.Replace(NodeDocument(corpus.Node{ID: id, Title: title, Text: "replaced from strings of the index"}))
	commit(t, w, &b2)
	lo := uintptr(unsafe.Pointer(unsafe.StringData(ix.NodeID(0))))
	last := ix.NodeID(ix.N() - 1)
	hi := uintptr(unsafe.Pointer(unsafe.StringData(last))) + uintptr(len(last))
	in := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return len(s) > 0 && p >= lo && p < hi
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t2 := range []*strtab.Names{&w.cat.docs, &w.cat.nodes} {
		for v := range int32(t2.Size()) {
			if t2.Has(v) && in(t2.Name(v)) {
				t.Fatalf("the catalog holds %q, a cut of an index in memory", t2.Name(v))
			}
		}
	}
}

// nextStart spaces commits by MinInterval and by ApplyShare, whichever is
// later.
func TestNextStart(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, c := range []struct {
		interval time.Duration
		share    float64
		took     time.Duration
		want     time.Duration
	}{
		{0, 1, 80 * time.Millisecond, 0},
		{0, 0.5, 80 * time.Millisecond, 160 * time.Millisecond},
		{0, 0.25, 80 * time.Millisecond, 320 * time.Millisecond},
		{time.Second, 0.5, 80 * time.Millisecond, time.Second},
		{50 * time.Millisecond, 0.5, 80 * time.Millisecond, 160 * time.Millisecond},
		{0, 0.01, time.Hour, maxShareWait}, // bounded
	} {
		w := &Writer{o: Options{MinInterval: c.interval, ApplyShare: c.share}}
		if got := w.nextStart(start, c.took).Sub(start); got != c.want {
			t.Errorf("interval %v, share %v, took %v: next after %v, want %v", c.interval, c.share, c.took, got, c.want)
		}
	}
}

// A commit waits for a place at Options.CPU before it works on its batch.
func TestCommitWaitsForTheCPUGate(t *testing.T) {
	dir := smallIndex(t)
	o, _ := testOptions(t)
	o.CPU = NewGate(1)
	w := mustOpen(t, dir, o)
	defer w.Close()
	o.CPU.Enter() // the place is taken, as a server's decoding would take it
	done := make(chan error, 1)
	go func() {
		var b Batch
		b.Add(passage("gated", "a passage that waits for the gate"))
		_, err := w.Commit(context.Background(), &b)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the commit went through a taken gate (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	o.CPU.Leave()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Index().Lookup("gated"); !ok {
		t.Fatal("the gated commit is not in the index")
	}
	if NewGate(0) != nil {
		t.Fatal("NewGate(0) bounds nothing: it must be nil")
	}
	NewGate(0).Enter() // a nil gate admits all
}

// TestDeletesInPlaceThenCompacts checks Options.DeletedShare: deletes and
// replaces stay in place (the index keeps its numbers) until they would
// pass the share, and that commit renumbers the index without them; a
// checkpoint writes the index compacted either way.
func TestDeletesInPlaceThenCompacts(t *testing.T) {
	dir := smallIndex(t)
	o, _ := testOptions(t)
	o.DeletedShare, o.MergeShare = 0.1, 0 // no background merge: the commit past the share renumbers
	w := mustOpen(t, dir, o)
	n := w.Index().N()
	bound := int(0.1 * float64(n))
	for i := 0; ; i++ {
		before := w.Index()
		var b Batch
		if i%2 == 0 {
			b.Delete(before.NodeID(liveAt(before, 0)))
		} else {
			v := liveAt(before, 1)
			b.Replace(passage(before.NodeID(v), "replaced text about lemurs"))
		}
		r := commit(t, w, &b)
		ix := w.Index()
		if r.Nodes != ix.Live() || ix.Live() != n-(i+2)/2 {
			t.Fatalf("commit %d: result %d nodes, index %d live, want %d", i, r.Nodes, ix.Live(), n-(i+2)/2)
		}
		if ix.Deleted() == 0 {
			if before.Deleted() != bound || w.Stats().Compactions != 1 || ix.N() != ix.Live() {
				t.Fatalf("commit %d: compacted with %d deleted (bound %d), %d compactions", i, before.Deleted(), bound, w.Stats().Compactions)
			}
			break
		}
		if ix.N() != before.N()+i%2 || ix.Deleted() != i+1 || w.Stats().Deleted != i+1 {
			t.Fatalf("commit %d: %d nodes, %d deleted; want %d and %d in place", i, ix.N(), ix.Deleted(), before.N()+i%2, i+1)
		}
		if i > n {
			t.Fatal("never compacted")
		}
	}
	var b Batch
	b.Delete(w.Index().NodeID(0))
	commit(t, w, &b)
	if w.Index().Deleted() != 1 {
		t.Fatalf("after the compaction: %d deleted, want 1 in place", w.Index().Deleted())
	}
	want := snapshotOf(w.Index())
	// With nothing stale, a refresh publishes the compaction alone.
	r, err := w.Refresh(context.Background())
	if err != nil || r.Compacted != 1 || w.Index().Deleted() != 0 || w.Stats().Compactions != 2 {
		t.Fatalf("refresh: %+v, %v; %d deleted after it, %d compactions", r, err, w.Index().Deleted(), w.Stats().Compactions)
	}
	if !reflect.DeepEqual(snapshotOf(w.Index()), want) {
		t.Fatal("the refresh's compaction changed the index")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	back := indextest.Open(t, dir)
	if back.Deleted() != 0 || !reflect.DeepEqual(snapshotOf(back), want) {
		t.Fatal("the checkpoint is not the compacted index")
	}
	o.DeletedShare = 1
	if _, err := Open(context.Background(), dir, o); err == nil || !strings.Contains(err.Error(), "DeletedShare") {
		t.Fatalf("DeletedShare 1: %v", err)
	}
}

// liveAt is the k-th live node of ix.
func liveAt(ix *index.Index, k int) int {
	for v := range ix.N() {
		if !ix.IsDeleted(v) {
			if k == 0 {
				return v
			}
			k--
		}
	}
	panic("no such live node")
}

// The checks this version adds to new writes (CheckNew) do not apply to a
// log's batches, which replay as older versions applied them, and an id
// the index already holds passes them, so an older document can still be
// replaced under it.
func TestNewChecksSpareLogsAndHeldIDs(t *testing.T) {
	w := smallWriter(t)
	var b Batch
	b.Add(passage("a b", "an id with a space"))
	if _, err := w.Commit(context.Background(), &b); !errors.Is(err, corpus.ErrMalformed) || !IsInvalid(err) {
		t.Fatalf("a new write with a spaced id: %v", err)
	}
	if err := newPending(w.Index(), newCatalog(w.Index())).take(b.ops); err != nil {
		t.Fatalf("the same batch as a log holds it, replayed: %v", err)
	}
	legacy, err := w.Index().Apply(context.Background(), &index.Change{Add: []corpus.Node{{ID: "a b", Text: "written before the check"}}})
	if err != nil {
		t.Fatal(err)
	}
	var r Batch
	r.Replace(passage("a b", "replaced under its old id"))
	if err := checkNew(legacy, r.ops); err != nil {
		t.Fatalf("replacing a document the index holds under an id refused today: %v", err)
	}
	var add Batch
	add.Add(passage("c\td", "new"))
	if err := checkNew(legacy, add.ops); !errors.Is(err, corpus.ErrMalformed) {
		t.Fatalf("a new id with a tab: %v", err)
	}
}
