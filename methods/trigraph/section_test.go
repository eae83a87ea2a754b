package trigraph

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/kernels/cpu"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/indextest"
	"github.com/gleaner-rag/gleaner/models/ner"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

func smallCorpus() *corpus.Corpus {
	return synth.Generate(synth.Options{People: 80, Cities: 20, Countries: 5, Bands: 20, Queries: 30, Seed: 3})
}

func buildIndex(t *testing.T, c *corpus.Corpus, opts ...index.Option) *index.Index {
	t.Helper()
	return indextest.Open(t, indextest.Build(t, c, opts...))
}

// hashEmbedder is a made-up text embedder (4 dimensions).
type hashEmbedder struct{}

func (hashEmbedder) Name() string { return "hash" }
func (hashEmbedder) Dim() int     { return 4 }
func (hashEmbedder) Embed(_ context.Context, texts []string) ([]float32, error) {
	out := make([]float32, 4*len(texts))
	for i, t := range texts {
		for j, r := range t {
			out[i*4+j%4] += float32(r % 7)
		}
	}
	return out, nil
}

// of is the index's Tri-Graph, nil when there is none.
func of(ix *index.Index) *TriGraph {
	tg, _ := Of(ix)
	return tg
}

func titlesOf(ix *index.Index) []string {
	var out []string
	for i := 0; i < ix.N(); i++ {
		out = append(out, ix.Title(i))
	}
	return out
}

// TestTriGraphRoundTrip builds a Tri-Graph, stores it, reopens the index
// and finds the same arrays; a later graph rewrite keeps it.
func TestTriGraphRoundTrip(t *testing.T) {
	ix := buildIndex(t, smallCorpus())
	o := DefaultBuildOptions()
	o.Backend = cpu.New()
	o.Extractor = ner.NewGazetteer(titlesOf(ix), ner.DefaultMinTitleLen)
	want, err := Build(context.Background(), ix, o)
	if err != nil {
		t.Fatal(err)
	}
	if want.Meta.Entities == 0 || want.Sentences == 0 || len(want.W.Idx) == 0 {
		t.Fatalf("empty tri-graph: %+v", want.Meta)
	}
	// Every passage–entity count is the case-sensitive count in the text.
	for p := 0; p < want.Passages; p++ {
		for q := want.PassEnts.Ptr[p]; q < want.PassEnts.Ptr[p+1]; q++ {
			e := want.Entities[want.PassEnts.Idx[q]]
			if c := strings.Count(ix.NodeText(p), e); float32(c) != want.PassEnts.W[q] || c == 0 {
				t.Fatalf("passage %d, entity %q: count %v, text has %d", p, e, want.PassEnts.W[q], c)
			}
		}
	}
	dir := ix.Dir
	ix.Close()
	if _, err := Set(context.Background(), dir, nil, o); err != nil {
		t.Fatal(err)
	}
	if err := index.SetGraph(context.Background(), dir, "extra", []graphops.Edge{{Src: 0, Dst: 1, W: 1}}); err != nil {
		t.Fatal(err)
	}
	got, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	tg := of(got)
	if tg == nil {
		t.Fatal("the tri-graph did not survive SetGraph")
	}
	if !reflect.DeepEqual(tg.Entities, want.Entities) || !reflect.DeepEqual(tg.Meta, want.Meta) {
		t.Fatalf("entities or meta differ after the round trip")
	}
	for _, c := range csrs {
		a, b := c.get(tg.TriGraph), c.get(want.TriGraph)
		if !reflect.DeepEqual(a.Ptr, b.Ptr) || !reflect.DeepEqual(a.Idx, b.Idx) || len(a.W) != len(b.W) {
			t.Fatalf("%s differs after the round trip", c.prefix)
		}
	}
	for s := 0; s < want.Sentences; s++ {
		if tg.Sentence(s) != want.Sentence(s) {
			t.Fatalf("sentence %d: %q, want %q", s, tg.Sentence(s), want.Sentence(s))
		}
	}
	if !reflect.DeepEqual(tg.EntityVecs, want.EntityVecs) || !reflect.DeepEqual(tg.SentenceVecs, want.SentenceVecs) {
		t.Fatal("vectors differ after the round trip")
	}
	if !reflect.DeepEqual(tg.order, want.order) || len(tg.order.sentences.Idx) < want.Sentences {
		t.Fatal("the passages' mention order differs after the round trip")
	}
	// The view over every passage is the Tri-Graph itself (the build
	// numbers in the same order), W included.
	all := filter.All(want.Passages)
	v, err := viewOf(want, all, func(string) bool { return true }, true, ix.Meta.Dims, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v.tg.Entities, want.Entities) || !reflect.DeepEqual(v.tg.PassEnts, want.PassEnts) || !reflect.DeepEqual(v.tg.Occur, want.Occur) ||
		!reflect.DeepEqual(v.tg.SentEnts, want.SentEnts) || !reflect.DeepEqual(v.tg.EntityVecs, want.EntityVecs) {
		t.Fatal("the view over every passage differs from the Tri-Graph")
	}
	for e := range int32(len(want.Entities)) {
		idx, w, err := v.tg.WRows(e)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := want.W.Ptr[e], want.W.Ptr[e+1]
		if !slices.Equal(idx, want.W.Idx[lo:hi]) || !slices.Equal(w, want.W.W[lo:hi]) {
			t.Fatalf("entity %d: view row %v %v, W %v %v", e, idx, w, want.W.Idx[lo:hi], want.W.W[lo:hi])
		}
	}
	// A Tri-Graph built before filters has no order: filtered queries are
	// refused, never answered from the whole graph.
	old := *want
	old.order = passageOrder{}
	if _, err := viewOf(&old, filter.All(want.Passages), func(string) bool { return true }, true, ix.Meta.Dims, cpu.New()); !errors.Is(err, retrieve.ErrFilterUnsupported) {
		t.Fatalf("a Tri-Graph without order: %v", err)
	}
}

// TestOccurrencesCountLikePython: lowercased, non-overlapping counts, one
// row per entity even when two entities lowercase alike, and whole-word
// counting as an option.
func TestOccurrencesCountLikePython(t *testing.T) {
	texts := []string{"US troops used the bus. The US.", "aaaa", "Paris, paris"}
	ents := []string{"US", "us", "aa", "Paris"}
	c := occurrences(texts, ents, false)
	want := map[[2]int]float32{{0, 0}: 4, {1, 0}: 4, {2, 1}: 2, {3, 2}: 2}
	check := func(c graphops.CSR, want map[[2]int]float32) {
		t.Helper()
		n := 0
		for e := 0; e < len(ents); e++ {
			for q := c.Ptr[e]; q < c.Ptr[e+1]; q++ {
				n++
				if w := want[[2]int{e, int(c.Idx[q])}]; w != c.W[q] {
					t.Fatalf("entity %q in passage %d: %v, want %v", ents[e], c.Idx[q], c.W[q], w)
				}
			}
		}
		if n != len(want) {
			t.Fatalf("%d entries, want %d", n, len(want))
		}
	}
	check(c, want)
	check(occurrences(texts, ents, true), map[[2]int]float32{{0, 0}: 2, {1, 0}: 2, {3, 2}: 2})
}

func TestTriGraphRefusals(t *testing.T) {
	ix := buildIndex(t, smallCorpus())
	if _, err := Build(context.Background(), ix, DefaultBuildOptions()); err == nil {
		t.Fatal("no extractor accepted")
	}
	o := DefaultBuildOptions()
	o.Backend = cpu.New()
	o.Extractor, o.Workers = ner.NewGazetteer(nil, 4), 0
	if _, err := Build(context.Background(), ix, o); err == nil {
		t.Fatal("zero workers accepted")
	}
	o.Workers = 1
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Set(ctx, ix.Dir, nil, o); err == nil {
		t.Fatal("cancelled build succeeded")
	}
	if reopened, err := index.Open(ix.Dir, store.OpenOptions{}); err != nil || of(reopened) != nil {
		t.Fatalf("a cancelled build changed the index: %v", err)
	} else {
		reopened.Close()
	}
}

// TestTriGraphWithTextEmbedder: an index built by an external embedder
// needs that embedder for its Tri-Graph, and a different one is refused.
func TestTriGraphWithTextEmbedder(t *testing.T) {
	c := smallCorpus()
	dir := filepath.Join(t.TempDir(), "ix")
	if err := index.Build(context.Background(), c, dir, index.WithTextEmbedder(hashEmbedder{}), index.WithoutHead()); err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, n := range c.Nodes {
		titles = append(titles, n.Title)
	}
	o := DefaultBuildOptions()
	o.Backend = cpu.New()
	o.Extractor = ner.NewGazetteer(titles, ner.DefaultMinTitleLen)
	if _, err := Set(context.Background(), dir, nil, o); err == nil || !strings.Contains(err.Error(), "--bi-encoder") {
		t.Fatalf("no embedder: %v", err)
	}
	if _, err := Set(context.Background(), dir, wrongDims{}, o); err == nil || !strings.Contains(err.Error(), "hash") {
		t.Fatalf("another embedder: %v", err)
	}
	m, err := Set(context.Background(), dir, hashEmbedder{}, o)
	if err != nil || m.Entities == 0 {
		t.Fatalf("with the embedder: %+v, %v", m, err)
	}
	ix, err := index.OpenWith(dir, store.OpenOptions{}, hashEmbedder{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if len(of(ix).EntityVecs) != m.Entities*4 {
		t.Fatalf("%d entity vector values for %d entities of 4 dims", len(of(ix).EntityVecs), m.Entities)
	}
}

type wrongDims struct{ hashEmbedder }

func (wrongDims) Dim() int { return 5 }

// stageHook runs fn when a stage of that name starts.
type stageHook struct {
	name string
	fn   func()
}

func (h stageHook) Stage(name string, _ int) {
	if name == h.name {
		h.fn()
	}
}
func (stageHook) Set(int) {}
func (stageHook) Finish() {}

// TestRewriteRefusesAChangedIndex: a Tri-Graph build that another writer
// overtook fails with ErrChanged instead of dropping that writer's edges;
// a read-only index is refused before any work.
func TestRewriteRefusesAChangedIndex(t *testing.T) {
	ix := buildIndex(t, smallCorpus())
	dir := ix.Dir
	ix.Close()
	o := DefaultBuildOptions()
	o.Backend = cpu.New()
	o.Extractor = ner.NewGazetteer([]string{"nothing here"}, 4)
	o.Progress = stageHook{"neighbour matrix", func() {
		if err := index.SetGraph(context.Background(), dir, "late", []graphops.Edge{{Src: 0, Dst: 1, W: 1}}); err != nil {
			t.Error(err)
		}
	}}
	if _, err := Set(context.Background(), dir, nil, o); !errors.Is(err, index.ErrChanged) {
		t.Fatalf("overtaken build: %v, want ErrChanged", err)
	}
	got, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got.Meta.GraphKinds, "late") || of(got) != nil {
		t.Fatalf("kinds %v, tri-graph %v: the other writer's edges must stay", got.Meta.GraphKinds, of(got) != nil)
	}
	got.Close()
	o.Progress = nil
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	if _, err := Set(context.Background(), dir, nil, o); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("read-only index: %v", err)
	}
}

// TestEmptyTriGraphOpens: a corpus in which the extractor finds nothing
// still gets a Tri-Graph that opens (empty tables read back as nil).
func TestEmptyTriGraphOpens(t *testing.T) {
	ix := buildIndex(t, smallCorpus())
	dir := ix.Dir
	ix.Close()
	o := DefaultBuildOptions()
	o.Backend = cpu.New()
	o.Extractor = ner.NewGazetteer(nil, 4)
	if m, err := Set(context.Background(), dir, nil, o); err != nil || m.Entities != 0 {
		t.Fatalf("%+v, %v", m, err)
	}
	got, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatalf("an empty Tri-Graph does not open: %v", err)
	}
	defer got.Close()
	if of(got) == nil || len(of(got).Entities) != 0 {
		t.Fatal("the empty Tri-Graph was not loaded")
	}
}
