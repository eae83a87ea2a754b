package methods_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/live"
	"github.com/gleaner-rag/gleaner/methods/internal/testindex"
	"github.com/gleaner-rag/gleaner/methods/ketrag"
	"github.com/gleaner-rag/gleaner/methods/trigraph"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// buildStep runs a build step on the index at dir with settings
// (name, value pairs).
func buildStep(t *testing.T, dir, step string, settings ...string) {
	t.Helper()
	cfg, err := retrieve.NewBuildConfig(step)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(settings); i += 2 {
		if err := cfg.Set(settings[i], settings[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := retrieve.Build(context.Background(), retrieve.BuildEnv{Backend: testindex.Backend()}, dir, cfg); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
}

// TestLiveRefreshEqualsBuild: after live changes the Tri-Graph, the HNSW
// graph and KET-RAG's structures are stale (nexusrag refuses); Refresh
// builds them in memory and the methods answer; after the checkpoint they
// equal what their build steps make of the saved index.
func TestLiveRefreshEqualsBuild(t *testing.T) {
	c := testindex.Corpus()
	dir := filepath.Join(t.TempDir(), "ix")
	testindex.Build(t, c, dir)
	buildStep(t, dir, trigraph.Section, "ner", "titles")
	buildStep(t, dir, retrieve.SectionHNSW, "m", "8", "ef-construction", "40")
	buildStep(t, dir, ketrag.Section, "ner", "titles", "beta", "0.5")
	buildStep(t, dir, "knn", "k-lex", "2")
	buildStep(t, dir, retrieve.SectionQuantized, "quantize", "int8")

	var logs bytes.Buffer
	o := live.DefaultOptions(slog.New(slog.NewTextHandler(&logs, nil)))
	o.Refresh.Backend = testindex.Backend()
	w, err := live.Open(context.Background(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	var b live.Batch
	b.Add(live.NodeDocument(corpus.Node{ID: "live-1", Title: "Live One",
		Text: c.Nodes[0].Title + " met " + c.Nodes[1].Title + " in " + c.Nodes[2].Title + ". They formed a band."}))
	b.Delete(c.Nodes[5].ID)
	if _, err := w.Commit(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	q := retrieve.Query{Text: "Who met " + c.Nodes[1].Title + "?"}
	if _, err := testindex.NewMethod(w.Index(), "nexusrag"); !errors.Is(err, index.ErrNotBuilt) {
		t.Fatalf("nexusrag on a stale Tri-Graph: %v, want a stale error", err)
	}
	if _, err := retrieve.QuantizedOf(w.Index()); !errors.Is(err, index.ErrNotBuilt) {
		t.Fatalf("quantized vectors after a change: %v, want a stale error", err)
	}
	if _, err := testindex.NewMethod(w.Index(), "vector", "search", "quantized"); !errors.Is(err, index.ErrNotBuilt) {
		t.Fatalf("vector --search quantized on stale quantized vectors: %v, want a stale error", err)
	}
	vq := retrieve.Query{Text: c.Nodes[1].Title}
	auto, err := testindex.Method(t, w.Index(), "vector").Retrieve(context.Background(), vq, 3)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := testindex.Method(t, w.Index(), "vector", "search", "exact").Retrieve(context.Background(), vq, 3)
	if err != nil || !slices.Equal(auto, exact) {
		t.Fatalf("vector auto on stale quantized vectors: %v, exact %v (%v)", auto, exact, err)
	}
	all := []string{retrieve.SectionHNSW, ketrag.Section, retrieve.SectionQuantized, trigraph.Section, index.KindLabel("knn")}
	if got := w.Index().Refreshable(); !slices.Equal(got, all) {
		t.Fatalf("refreshable %v", got)
	}
	r, err := w.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Built, all) || len(r.Stale) != 0 {
		t.Fatalf("refresh %+v, want both built and none stale", r)
	}
	m := testindex.Method(t, w.Index(), "nexusrag")
	if _, err := m.Retrieve(context.Background(), q, 5); err != nil {
		t.Fatalf("nexusrag after the refresh: %v", err)
	}
	if st := w.Stats(); st.Refreshes != 1 || st.Stale != nil {
		t.Fatalf("stats %+v", st)
	}
	live1, hnsw1 := sectionsOf(t, w.Index())
	ket1, knn1, q1 := ketragOf(t, w.Index()), w.Index().KindEdges("knn"), quantizedOf(t, w.Index())
	if len(knn1) == 0 || w.Index().Meta.StaleKind("knn") {
		t.Fatalf("after the refresh: %d knn edges, stale %v", len(knn1), w.Index().Meta.StaleKind("knn"))
	}
	if _, err := testindex.Method(t, w.Index(), "ketrag").Retrieve(context.Background(), q, 5); err != nil {
		t.Fatalf("ketrag after the refresh: %v", err)
	}
	retrieve.CloseAll(context.Background(), m)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	saved := testindex.Open(t, dir)
	if saved.Meta.Stale != nil {
		t.Fatalf("saved index stale: %+v", saved.Meta.Stale)
	}
	savedTG, savedHNSW := sectionsOf(t, saved)
	savedKet, savedKNN, savedQ := ketragOf(t, saved), saved.KindEdges("knn"), quantizedOf(t, saved)
	copyDir := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(copyDir, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	buildStep(t, copyDir, trigraph.Section, "ner", "titles")
	buildStep(t, copyDir, retrieve.SectionHNSW, "m", "8", "ef-construction", "40")
	buildStep(t, copyDir, ketrag.Section, "ner", "titles", "beta", "0.5")
	buildStep(t, copyDir, "knn", "k-lex", "2")
	buildStep(t, copyDir, retrieve.SectionQuantized, "quantize", "int8")
	built := testindex.Open(t, copyDir)
	builtTG, builtHNSW := sectionsOf(t, built)
	builtKet := ketragOf(t, built)
	for _, s := range []struct {
		name string
		a, b any
	}{{"refreshed vs saved tri-graph", live1, savedTG}, {"saved vs built tri-graph", savedTG, builtTG},
		{"refreshed vs saved hnsw", hnsw1, savedHNSW}, {"saved vs built hnsw", savedHNSW, builtHNSW},
		{"refreshed vs saved ketrag", ket1, savedKet}, {"saved vs built ketrag", savedKet, builtKet},
		{"refreshed vs saved knn", knn1, savedKNN}, {"saved vs built knn", savedKNN, built.KindEdges("knn")},
		{"refreshed vs saved quantized", q1, savedQ}, {"saved vs built quantized", savedQ, quantizedOf(t, built)}} {
		if !reflect.DeepEqual(s.a, s.b) {
			t.Errorf("%s differ", s.name)
		}
	}
}

// ketragOf is the index's KET-RAG structures, comparable.
func ketragOf(t *testing.T, ix *index.Index) any {
	t.Helper()
	k, err := ketrag.Of(ix)
	if err != nil {
		t.Fatal(err)
	}
	c := *k
	c.Meta.BuildSeconds = 0 // the one field a build may differ in
	return c
}

// quantizedOf is the index's quantized vectors, copied out of its mapping.
func quantizedOf(t *testing.T, ix *index.Index) engine.QuantRows {
	t.Helper()
	m, err := retrieve.QuantizedOf(ix)
	if err != nil {
		t.Fatal(err)
	}
	if m.N != ix.N() {
		t.Fatalf("quantized %d rows for %d nodes", m.N, ix.N())
	}
	return engine.QuantRows{Kind: m.Kind, N: m.N, D: m.D, I8: slices.Clone(m.I8), Scale: slices.Clone(m.Scale), BF16: slices.Clone(m.BF16)}
}

// sectionsOf is the index's Tri-Graph arrays and HNSW graph, comparable.
func sectionsOf(t *testing.T, ix *index.Index) (tg []any, g any) {
	t.Helper()
	x, err := trigraph.Of(ix)
	if err != nil {
		t.Fatal(err)
	}
	h, err := retrieve.HNSWOf(ix)
	if err != nil {
		t.Fatal(err)
	}
	sents := make([]string, x.Sentences)
	for i := range sents {
		sents[i] = x.Sentence(i)
	}
	return []any{x.Meta, x.Entities, sents, x.EntSents, x.SentEnts, x.PassEnts, x.Occur, x.W, x.EntityVecs, x.SentenceVecs},
		[]any{h.N, h.Dims, h.M, h.Entry, h.Levels, h.Layer0, h.Upper, h.UpperOff}
}

// TestLiveRefitEqualsRebuild: after live changes, a refit and a refresh,
// the vectors and every refreshed structure equal those of a new index
// built from the same passages with the same steps.
func TestLiveRefitEqualsRebuild(t *testing.T) {
	c := testindex.Corpus()
	dir := filepath.Join(t.TempDir(), "ix")
	testindex.Build(t, c, dir)
	steps := [][]string{{trigraph.Section, "ner", "titles"}, {retrieve.SectionHNSW, "m", "8", "ef-construction", "40"},
		{ketrag.Section, "ner", "titles", "beta", "0.5"}, {"knn", "k-lex", "2"}}
	for _, s := range steps {
		buildStep(t, dir, s[0], s[1:]...)
	}
	o := live.DefaultOptions(slog.New(slog.DiscardHandler))
	o.Refresh.Backend = testindex.Backend()
	w, err := live.Open(context.Background(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var b live.Batch
	b.Add(live.NodeDocument(corpus.Node{ID: "live-2", Title: "Live Two", Text: c.Nodes[3].Title + " toured with " + c.Nodes[4].Title + "."}))
	b.Delete(c.Nodes[7].ID)
	if _, err := w.Commit(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if err := w.Refit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r, err := w.Refresh(context.Background()); err != nil || len(r.Built) != 4 {
		t.Fatalf("refresh after the refit: %+v, %v", r, err)
	}
	if err := w.Refit(context.Background()); err != nil || w.Index().Meta.Stale != nil {
		t.Fatalf("a second refit, on the same passages: %v; stale %+v (want nothing stale: the basis is the same)", err, w.Index().Meta.Stale)
	}
	ix := w.Index()
	c2 := &corpus.Corpus{}
	for i := range ix.N() {
		c2.Nodes = append(c2.Nodes, corpus.Node{ID: ix.NodeID(i), Title: ix.Title(i), Text: ix.Text(i), Type: ix.Type(i), Aliases: ix.Aliases(i)})
	}
	dir2 := filepath.Join(t.TempDir(), "fresh")
	testindex.Build(t, c2, dir2)
	for _, s := range steps {
		buildStep(t, dir2, s[0], s[1:]...)
	}
	fresh := testindex.Open(t, dir2)
	tgA, hA := sectionsOf(t, ix)
	tgB, hB := sectionsOf(t, fresh)
	for _, s := range []struct {
		name string
		a, b any
	}{{"vectors", ix.Vectors, fresh.Vectors}, {"tri-graph", tgA, tgB}, {"hnsw", hA, hB},
		{"ketrag", ketragOf(t, ix), ketragOf(t, fresh)}, {"knn", ix.KindEdges("knn"), fresh.KindEdges("knn")}} {
		if !reflect.DeepEqual(s.a, s.b) {
			t.Errorf("%s: the refitted live index differs from a rebuild", s.name)
		}
	}
}
