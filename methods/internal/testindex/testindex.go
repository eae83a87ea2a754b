// Package testindex builds the synthetic indexes the method tests share:
// a multi-hop corpus with a trained head and every section (a Tri-Graph,
// KET-RAG's structures, a tiny trained SeedER encoder), so every
// registered method runs.
package testindex

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/indextest"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/methods/ketrag"
	"github.com/gleaner-rag/gleaner/methods/seeder"
	"github.com/gleaner-rag/gleaner/methods/trigraph"
	"github.com/gleaner-rag/gleaner/models/kgextract"
	"github.com/gleaner-rag/gleaner/models/lexical"
	"github.com/gleaner-rag/gleaner/models/ner"
	encoder "github.com/gleaner-rag/gleaner/models/seeder"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// Env is the cpu backend, as the tests run methods.
func Env() retrieve.Env { return retrieve.Env{Backend: cpu.New()} }

// Backend is the cpu backend.
func Backend() engine.Backend { return cpu.New() }

// Corpus is the synthetic corpus the shared index is built from.
func Corpus() *corpus.Corpus {
	return synth.Generate(synth.Options{People: 120, Cities: 20, Countries: 5, Bands: 30, Queries: 40, Seed: 4})
}

// SmallHead trains the lexical head quickly (index.Build trains one by
// default), so the reranking methods can run.
func SmallHead() index.HeadOptions {
	o := index.DefaultHeadOptions()
	o.Pseudo, o.Epochs = 200, 5
	return o
}

// Build indexes c at dir with 24-dimensional LSA and a small head.
func Build(t testing.TB, c *corpus.Corpus, dir string) {
	t.Helper()
	lsa := lexical.DefaultLSA()
	lsa.Dims = 24
	if err := index.Build(context.Background(), c, dir, index.WithLSA(lsa), index.WithHead(SmallHead())); err != nil {
		t.Fatal(err)
	}
}

// Open opens the index at dir, closed when the test ends.
func Open(t testing.TB, dir string) *index.Index {
	t.Helper()
	return indextest.Open(t, dir)
}

// Queries are c's questions as method queries.
func Queries(c *corpus.Corpus) []retrieve.Query {
	qs := make([]retrieve.Query, len(c.Queries))
	for i, q := range c.Queries {
		qs[i] = retrieve.Query{ID: q.ID, Text: q.Text}
	}
	return qs
}

// Full builds a fresh synthetic index with every section in a temporary
// folder: each call its own (tests that rewrite it use this).
func Full(t testing.TB) (*index.Index, []retrieve.Query) {
	t.Helper()
	c := Corpus()
	dir := filepath.Join(t.TempDir(), "ix")
	Build(t, c, dir)
	addSections(t, c, dir)
	return Open(t, dir), Queries(c)
}

var shared struct {
	sync.Once
	dir string
	qs  []retrieve.Query
}

// Shared opens one synthetic index with every section, built once per test
// binary and opened read-only by each test; Cleanup removes it (call it
// from TestMain).
func Shared(t testing.TB) (*index.Index, []retrieve.Query) {
	t.Helper()
	shared.Do(func() {
		dir, err := os.MkdirTemp("", "gleaner-methods-test")
		if err != nil {
			t.Fatal(err)
		}
		c := Corpus()
		ix := filepath.Join(dir, "ix")
		Build(t, c, ix)
		addSections(t, c, ix)
		shared.dir, shared.qs = dir, Queries(c)
	})
	if shared.dir == "" {
		t.Fatal("the shared synthetic index failed to build")
	}
	return Open(t, filepath.Join(shared.dir, "ix")), shared.qs
}

// addSections adds every registered section to the index at dir (corpus
// c): the built-in ones with settings that keep them small, then any other
// (a new method's) by its build step at its defaults, so that every
// registered method runs on the shared index.
func addSections(t testing.TB, c *corpus.Corpus, dir string) {
	t.Helper()
	AddTriGraph(t, c, dir, "titles")
	AddKETRAG(t, c, dir)
	AddSeeder(t, c, dir)
	have := map[string]bool{}
	ix := Open(t, dir)
	for _, st := range ix.Sections() {
		have[st.Name] = true
	}
	for _, b := range retrieve.Builds() {
		if b.Section == "" || have[b.Section] {
			continue
		}
		cfg, err := retrieve.NewBuildConfig(b.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := retrieve.Build(context.Background(), retrieve.BuildEnv{Backend: Backend()}, dir, cfg); err != nil {
			t.Fatalf("build step %s: %v", b.Name, err)
		}
		have[b.Section] = true
	}
}

// Main runs a package's tests (call it from TestMain) and removes the
// shared index after them.
func Main(m *testing.M) {
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// AddTriGraph builds the Tri-Graph of the index at dir with the named NER
// over c's titles.
func AddTriGraph(t testing.TB, c *corpus.Corpus, dir, nerName string) {
	t.Helper()
	var titles []string
	for _, n := range c.Nodes {
		titles = append(titles, n.Title)
	}
	ex, err := ner.New(nerName, titles)
	if err != nil {
		t.Fatal(err)
	}
	o := trigraph.DefaultBuildOptions()
	o.Backend = cpu.New()
	o.Extractor = ex
	if _, err := trigraph.Set(context.Background(), dir, nil, o); err != nil {
		t.Fatal(err)
	}
}

// AddKETRAG builds KET-RAG's structures with a gazetteer of c's titles.
func AddKETRAG(t testing.TB, c *corpus.Corpus, dir string) {
	t.Helper()
	AddKETRAGWith(t, c, dir, func(ex kgextract.Extractor) kgextract.Extractor { return ex })
}

// AddKETRAGWith is AddKETRAG with the extractor wrap makes of the local one.
func AddKETRAGWith(t testing.TB, c *corpus.Corpus, dir string, wrap func(kgextract.Extractor) kgextract.Extractor) {
	t.Helper()
	var titles []string
	for _, n := range c.Nodes {
		titles = append(titles, n.Title)
	}
	ex, err := kgextract.NewLocal(ner.NewGazetteer(titles, ner.DefaultMinTitleLen))
	if err != nil {
		t.Fatal(err)
	}
	o := ketrag.DefaultBuildOptions()
	o.Backend = cpu.New()
	o.Extractor = wrap(ex)
	o.UnitTokens, o.PieceTokens = 300, 80
	if _, err := ketrag.Set(context.Background(), dir, nil, o); err != nil {
		t.Fatal(err)
	}
}

// TinySeeder is a small, fast SeedER training setup.
func TinySeeder() seeder.TrainOptions {
	so := seeder.DefaultTrainOptions()
	so.Model = encoder.Config{In: 3, Hidden: 8, Heads: 2, Layers: 2, MaxHop: 2, Cycles: 1, Virtual: true, HopGate: true, Seed: 2}
	so.Train.Epochs, so.Train.Batch, so.Train.Loss.K = 4, 2, 3
	return so
}

// AddSeeder trains a one-epoch encoder on c's first questions and stores it.
func AddSeeder(t testing.TB, c *corpus.Corpus, dir string) {
	t.Helper()
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	so := TinySeeder()
	so.Train.Epochs = 1
	f, err := seeder.Train(context.Background(), ix, Env(), seeder.DefaultKGOptions(), so, c.Queries[:10], c.Queries[10:14])
	ix.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := seeder.Set(context.Background(), dir, f); err != nil {
		t.Fatal(err)
	}
}

// Ranking is m's top-k node numbers for q.
func Ranking(t testing.TB, m retrieve.Method, q retrieve.Query, k int) []int32 {
	t.Helper()
	hits, err := m.Retrieve(context.Background(), q, k)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int32, len(hits))
	for i, h := range hits {
		out[i] = h.Index
	}
	return out
}

// Method makes the method called name with settings set by name ("bmax",
// "20"), closed when the test ends.
func Method(t testing.TB, ix *index.Index, name string, settings ...string) retrieve.Method {
	t.Helper()
	m, err := NewMethod(ix, name, settings...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { retrieve.CloseAll(context.Background(), m) })
	return m
}

// NewMethod is Method returning its error.
func NewMethod(ix *index.Index, name string, settings ...string) (retrieve.Method, error) {
	cfg, err := retrieve.NewConfig(name)
	if err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(settings); i += 2 {
		if err := cfg.Set(settings[i], settings[i+1]); err != nil {
			return nil, err
		}
	}
	return retrieve.New(ix, Env(), cfg)
}
