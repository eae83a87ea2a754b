package trigraph_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gleaner-rag/gleaner/kernels/cpu"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/indextest"
	"github.com/gleaner-rag/gleaner/methods/internal/testindex"
	"github.com/gleaner-rag/gleaner/methods/trigraph"
	"github.com/gleaner-rag/gleaner/models/lexical"
	"github.com/gleaner-rag/gleaner/models/ner"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

func env() retrieve.Env { return testindex.Env() }

// tgOf is the index's Tri-Graph.
func tgOf(t *testing.T, ix *index.Index) *trigraph.TriGraph {
	t.Helper()
	tg, err := trigraph.Of(ix)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// twoHopCorpus is 20 passages written for this test. The question "Who is
// the mayor of the town where Harold Venn was born?" needs p0 (Harold Venn
// → Dunmore) and p1 (Dunmore → its mayor); the passages that mention a
// mayor are distractors for BM25, and p1 never names Harold Venn.
func twoHopCorpus() *corpus.Corpus {
	texts := [][2]string{
		{"Harold Venn", "Harold Venn is a painter of harbours. Harold Venn was born in Dunmore."},
		{"Dunmore", "Dunmore lies on the river Ash. The mayor of Dunmore is Clara Tess."},
		{"Clara Tess", "Clara Tess studied law in Ravel and joined the council of Dunmore."},
	}
	towns := []string{"Kelp", "Orrin", "Valse", "Tamber", "Holm", "Brisk", "Quarry", "Lune", "Fenwick"}
	people := []string{"Tom Ray", "Ada Crane", "Ivo Marsh", "Uma Pell", "Rex Dole", "Nia Brook", "Ole Hart", "Eve Stark", "Sol Kent"}
	for i, town := range towns {
		texts = append(texts, [2]string{town, fmt.Sprintf("%s is a town where the mayor %s was born and the mayor of %s is %s.", town, people[i], town, people[i])})
	}
	for i, person := range people[:8] {
		texts = append(texts, [2]string{person, fmt.Sprintf("%s was born in %s and was mayor of %s for years.", person, towns[i], towns[i])})
	}
	c := &corpus.Corpus{}
	for i, t := range texts {
		c.Nodes = append(c.Nodes, corpus.Node{ID: fmt.Sprintf("p%d", i), Title: t[0], Text: t[1]})
	}
	return c
}

// buildTriGraphIndex indexes c (LSA, 16 dims) and adds its Tri-Graph with the
// titles gazetteer.
func buildTriGraphIndex(t *testing.T, c *corpus.Corpus, nerName string) *index.Index {
	t.Helper()
	lsa := lexical.DefaultLSA()
	lsa.Dims, lsa.MinDF, lsa.MaxDFRatio = 16, 1, 1 // every term counts in a 20-passage corpus
	dir := indextest.Build(t, c, index.WithLSA(lsa))
	testindex.AddTriGraph(t, c, dir, nerName)
	return indextest.Open(t, dir)
}

func ids(ix *index.Index, hits []retrieve.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, ix.NodeID(int(h.Index)))
	}
	return out
}

// TestNexusRAGFindsTheSecondHop: the bridge entity Dunmore is reached
// through the sentence "Harold Venn was born in Dunmore", so p1 ranks in
// the top 3 of nexusrag and linearrag although it does not mention the
// question's entity.
func TestNexusRAGFindsTheSecondHop(t *testing.T) {
	ix := buildTriGraphIndex(t, twoHopCorpus(), "titles")
	q := retrieve.Query{ID: "q", Text: "Who is the mayor of the town where Harold Venn was born?"}
	o := trigraph.DefaultOptions()
	// Both of Harold Venn's sentences, and δ low enough for 16-dimensional
	// LSA cosines: the test is about the hops, not LSA's similarities.
	o.Sentences, o.Threshold = 2, 0.1
	for _, newM := range []func(*index.Index, retrieve.Env, trigraph.Options) (*trigraph.Method, error){trigraph.NewNexusRAG, trigraph.NewLinearRAG} {
		m, err := newM(ix, env(), o)
		if err != nil {
			t.Fatal(err)
		}
		name := m.Name()
		hits, err := m.Retrieve(context.Background(), q, 3)
		if err != nil {
			t.Fatal(err)
		}
		got := ids(ix, hits)
		if !slices.Contains(got, "p0") || !slices.Contains(got, "p1") {
			t.Errorf("%s top 3 = %v, want p0 and p1", name, got)
		}
		_, tr, err := m.Trace(context.Background(), q, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Seeds) != 1 || tr.Seeds[0].Entity != "Harold Venn" || tr.Seeds[0].Score != 1 {
			t.Errorf("%s seeds = %+v, want Harold Venn linked exactly", name, tr.Seeds)
		}
		active := map[string]bool{}
		for _, a := range tr.Active {
			active[tgOf(t, ix).Entities[a.Entity]] = true
		}
		if !active["Dunmore"] {
			t.Errorf("%s: Dunmore not activated (%v)", name, active)
		}
	}
	bm, _ := retrieve.NewNamed("bm25", ix, env())
	hits, _ := bm.Retrieve(context.Background(), q, 3)
	if got := ids(ix, hits); slices.Contains(got, "p1") {
		t.Logf("note: BM25 also finds p1 in its top 3 (%v)", got)
	}
}

// TestNexusRAGMatchesItsParts recomputes one query from the exported
// operators (seed, propagation, bonus, reset, PageRank) and expects the
// method's ranking and scores (PageRank solved to its tolerance), and
// the same ranking from a PageRank stopped once the top k are certain.
func TestNexusRAGMatchesItsParts(t *testing.T) {
	ix := buildTriGraphIndex(t, twoHopCorpus(), "titles")
	tg := tgOf(t, ix)
	q := "Who is the mayor of the town where Harold Venn was born?"
	to := trigraph.DefaultOptions()
	to.CertifiedStop = false
	m, err := trigraph.NewNexusRAG(ix, env(), to)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Retrieve(context.Background(), retrieve.Query{Text: q}, 20)
	if err != nil {
		t.Fatal(err)
	}
	to.CertifiedStop = true
	mc, err := trigraph.NewNexusRAG(ix, env(), to)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1, 3, 20} {
		early, tr, err := mc.Trace(context.Background(), retrieve.Query{Text: q}, k)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("k %d: %d sweeps, certified %v", k, tr.Sweeps, tr.Certified)
		if !slices.Equal(ids(ix, early), ids(ix, got)[:len(early)]) || len(early) != min(k, len(got)) {
			t.Fatalf("k %d: stopped when certain %v; solved to the tolerance %v", k, ids(ix, early), ids(ix, got))
		}
	}
	qv, _ := ix.EmbedQuery(context.Background(), q)
	seed := int32(slices.Index(tg.Entities, "Harold Venn"))
	d := ix.Meta.Dims
	sim := func(s int32) float32 {
		var x float64
		for i := 0; i < d; i++ {
			x += float64(tg.SentenceVecs[int(s)*d+i]) * float64(qv[i])
		}
		return float32(x)
	}
	prop, err := tg.Propagate(context.Background(), []graphops.Seed{{Entity: seed, Score: 1}}, sim,
		graphops.PropagationOptions{MaxIter: to.MaxIter, Threshold: to.Threshold, Sentences: to.Sentences, Neighbours: true})
	if err != nil {
		t.Fatal(err)
	}
	bonus := make([]float64, tg.Passages)
	tg.PassageBonus(prop.Active, bonus)
	np := tg.Passages
	reset := make([]float64, np+len(tg.Entities))
	dpr := make([]float64, np)
	lo, hi := 1e300, -1e300
	for p := range dpr {
		var x float64
		for i := 0; i < d; i++ {
			x += float64(ix.Vectors[p*d+i]) * float64(qv[i])
		}
		dpr[p] = max(x, 0)
		lo, hi = min(lo, dpr[p]), max(hi, dpr[p])
	}
	for p := range dpr {
		reset[p] = to.PassageWeight * (expF((dpr[p]-lo)/(hi-lo)) + bonus[p])
	}
	for e, w := range prop.Weights {
		reset[np+e] = max(w, 0)
	}
	adj, _ := tg.PageRankGraph(true)
	pi, _, err := graphops.PersonalizedPageRank(context.Background(), adj, reset, graphops.PPROptions{Damping: 0.5, Tol: 1e-12, MaxIter: 1000})
	if err != nil {
		t.Fatal(err)
	}
	want := engine.NewTopK(20)
	for p := 0; p < np; p++ {
		want.Push(int32(p), float32(pi[p]))
	}
	w := want.Results()
	for i := range w {
		// Both walks are float64 solved to ≤ 1e-10 (L1) and rounded to
		// float32: equal within one float32 rounding each plus the solver
		// tolerance; ranks may swap only between such equal scores.
		tol := 2*0x1p-24*float64(w[i].Score) + 1e-10
		if absF(float64(got[i].Score-w[i].Score)) > tol {
			t.Fatalf("rank %d: method %v, recomputed %v", i, got[i], w[i])
		}
	}
}

func expF(x float64) float64 {
	s, term := 1.0, 1.0
	for k := 1; k < 40; k++ {
		term *= x / float64(k)
		s += term
	}
	return s
}

func absF(x float64) float64 { return max(x, -x) }

// TestTriGraphMethodErrors: a missing Tri-Graph, empty questions and bad
// options are errors naming what to do.
func TestTriGraphMethodErrors(t *testing.T) {
	c := twoHopCorpus()
	dir := filepath.Join(t.TempDir(), "ix")
	if err := index.Build(context.Background(), c, dir, index.WithoutHead()); err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if _, err := retrieve.NewNamed("nexusrag", ix, env()); !errors.Is(err, trigraph.ErrNoTriGraph) || !errors.Is(err, index.ErrNotBuilt) || !strings.Contains(err.Error(), "--kind trigraph") {
		t.Fatalf("no tri-graph: %v", err)
	}
	ix2 := buildTriGraphIndex(t, c, "titles")
	m, _ := trigraph.NewLinearRAG(ix2, env(), trigraph.DefaultOptions())
	if _, err := m.Retrieve(context.Background(), retrieve.Query{Text: "  "}, 5); !errors.Is(err, retrieve.ErrEmptyQuery) {
		t.Fatalf("empty question: %v", err)
	}
	for _, bad := range []func(*trigraph.Options){
		func(o *trigraph.Options) { o.MaxIter = 0 },
		func(o *trigraph.Options) { o.Damping = 1 },
		func(o *trigraph.Options) { o.Threshold = -1 },
		func(o *trigraph.Options) { o.PassageScores = "dense" },
		func(o *trigraph.Options) { o.PassageRatio = -0.5 },
		func(o *trigraph.Options) { o.PassageWeight = 1e307 }, // would overflow the restart mass
		func(o *trigraph.Options) { o.Tolerance = 0 },
	} {
		o := trigraph.DefaultOptions()
		bad(&o)
		if _, err := trigraph.NewNexusRAG(ix2, env(), o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
		if o.Validate() == nil {
			t.Errorf("Validate accepted %+v", o)
		}
	}
	if _, err := trigraph.Preset("squad"); err == nil {
		t.Fatal("unknown preset accepted")
	}
	// A question without entities falls back to dense retrieval.
	q := retrieve.Query{Text: "where was the painter of harbours born"}
	nx, _ := trigraph.NewNexusRAG(ix2, env(), trigraph.DefaultOptions())
	_, tr, err := nx.Trace(context.Background(), q, 5)
	if err != nil || !tr.Fallback {
		t.Fatalf("no entity: fallback %v, %v", tr.Fallback, err)
	}
	// A question with no entity and nothing the embedder or BM25 knows gets
	// no hits (as bm25 and vector answer it), not the first passages with
	// score 0.
	for _, name := range []string{"nexusrag", "linearrag"} {
		for _, scores := range retrieve.Stages() {
			m, err := testindex.NewMethod(ix2, name, "passage-scores", scores)
			if err != nil {
				t.Fatal(err)
			}
			if hits, err := m.Retrieve(context.Background(), retrieve.Query{Text: "12345 678 ?!"}, 5); err != nil || len(hits) != 0 {
				t.Errorf("%s (%s scores), a question without signal: %d hits, %v", name, scores, len(hits), err)
			}
		}
	}
}

// TestEmptyTriGraphFallsBack: a Tri-Graph without entities answers by the
// dense ranking.
func TestEmptyTriGraphFallsBack(t *testing.T) {
	c := twoHopCorpus()
	dir := filepath.Join(t.TempDir(), "ix")
	if err := index.Build(context.Background(), c, dir, index.WithoutHead()); err != nil {
		t.Fatal(err)
	}
	o := trigraph.DefaultBuildOptions()
	o.Backend = cpu.New()
	o.Extractor = ner.NewGazetteer(nil, 4)
	if _, err := trigraph.Set(context.Background(), dir, nil, o); err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	m, _ := retrieve.NewNamed("nexusrag", ix, env())
	hits, err := m.Retrieve(context.Background(), retrieve.Query{Text: "Where was Harold Venn born?"}, 3)
	if err != nil || len(hits) == 0 {
		t.Fatalf("%v, %v", hits, err)
	}
}

// Filtered queries from many goroutines, over more distinct filters than
// the views an index keeps, answer as the same queries one at a time
// (run with -race: the views and their W blocks are shared).
func TestFilteredViewsAreSafeConcurrently(t *testing.T) {
	c := synth.Generate(synth.Options{People: 40, Cities: 8, Countries: 3, Bands: 10, Queries: 6, Seed: 3})
	ix := buildTriGraphIndex(t, c, "both")
	m, err := trigraph.NewNexusRAG(ix, env(), trigraph.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var sets []*filter.Set
	for s := range 20 { // more than the 16 views kept
		var nodes []int32
		for i := range ix.N() {
			if (i*7+s)%3 != 0 {
				nodes = append(nodes, int32(i))
			}
		}
		sets = append(sets, filter.NewSet(ix.N(), nodes...))
	}
	want := make([][]retrieve.Hit, len(sets)*len(c.Queries))
	for i := range want {
		q := retrieve.Query{Text: c.Queries[i%len(c.Queries)].Text, Allow: sets[i/len(c.Queries)]}
		if want[i], err = m.Retrieve(context.Background(), q, 5); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(want); i += 4 {
				q := retrieve.Query{Text: c.Queries[i%len(c.Queries)].Text, Allow: sets[i/len(c.Queries)]}
				got, err := m.Retrieve(context.Background(), q, 5)
				if err != nil || !slices.Equal(got, want[i]) {
					t.Errorf("query %d: %v %v, one at a time %v", i, got, err, want[i])
				}
			}
		})
	}
	wg.Wait()
}
