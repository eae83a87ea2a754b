package retrieve_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/eval"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels"
	"github.com/gleaner-rag/gleaner/models/lexical"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func openSynth(t *testing.T) (*index.Index, []retrieve.Query) {
	t.Helper()
	c := synth.Generate(synth.Options{People: 120, Cities: 20, Countries: 5, Bands: 30, Queries: 40, Seed: 4})
	dir := filepath.Join(t.TempDir(), "ix")
	lsa := lexical.DefaultLSA()
	lsa.Dims = 24
	if err := index.Build(context.Background(), c, dir, index.WithLSA(lsa), index.WithHead(smallHead())); err != nil {
		t.Fatal(err)
	}
	addTitlesTriGraph(t, c, dir) // so every registered method runs
	addKETRAG(t, c, dir)
	addSeeder(t, c, dir)
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	qs := make([]retrieve.Query, len(c.Queries))
	for i, q := range c.Queries {
		qs[i] = retrieve.Query{ID: q.ID, Text: q.Text}
	}
	return ix, qs
}

func TestMain(m *testing.M) {
	code := m.Run()
	if synthOnce.ix != nil {
		synthOnce.ix.Close()
	}
	if synthOnce.dir != "" {
		os.RemoveAll(synthOnce.dir)
	}
	os.Exit(code)
}

var synthOnce struct {
	sync.Once
	ix  *index.Index
	qs  []retrieve.Query
	dir string
}

// openSynthOnce shares one synthetic index between the read-only tests of
// the package (building it with a head takes a while).
func openSynthOnce(t *testing.T) (*index.Index, []retrieve.Query) {
	t.Helper()
	synthOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gleaner-retrieve-test")
		if err != nil {
			t.Fatal(err)
		}
		synthOnce.dir = dir
		c := synth.Generate(synth.Options{People: 120, Cities: 20, Countries: 5, Bands: 30, Queries: 40, Seed: 4})
		lsa := lexical.DefaultLSA()
		lsa.Dims = 24
		if err := index.Build(context.Background(), c, filepath.Join(dir, "ix"), index.WithLSA(lsa), index.WithHead(smallHead())); err != nil {
			t.Fatal(err)
		}
		if synthOnce.ix, err = index.Open(filepath.Join(dir, "ix"), store.OpenOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, q := range c.Queries {
			synthOnce.qs = append(synthOnce.qs, retrieve.Query{ID: q.ID, Text: q.Text})
		}
	})
	if synthOnce.ix == nil {
		t.Fatal("the shared synthetic index failed to build")
	}
	return synthOnce.ix, synthOnce.qs
}

// smallHead trains the lexical head quickly (index.Build trains one by
// default), so the reranking methods can run.
func smallHead() index.HeadOptions {
	o := index.DefaultHeadOptions()
	o.Pseudo, o.Epochs = 200, 5
	return o
}

func TestRe2RerankesBM25TopHundred(t *testing.T) {
	ix, qs := openSynth(t)
	o := retrieve.DefaultOptions()
	o.FirstStage = retrieve.StageBM25
	m, err := retrieve.NewWith("re2", ix, o)
	if err != nil {
		t.Fatal(err)
	}
	defer retrieve.CloseAll(context.Background(), m)
	for _, q := range qs[:10] {
		hits, err := m.Retrieve(context.Background(), q, 100)
		if err != nil {
			t.Fatal(err)
		}
		first := ix.BM25.Search(q.Text, 100)
		if len(hits) != len(first) {
			t.Fatalf("%d hits, first stage %d", len(hits), len(first))
		}
		in := map[int32]bool{}
		for _, h := range first {
			in[h.Index] = true
		}
		for i, h := range hits {
			if !in[h.Index] {
				t.Fatalf("node %d is not in the first stage", h.Index)
			}
			if i > 0 && h.Score > hits[i-1].Score {
				t.Fatalf("rank %d out of order", i)
			}
		}
	}
}

func TestRegistry(t *testing.T) {
	ix, _ := openSynth(t)
	if _, err := retrieve.New("nope", ix); err == nil {
		t.Error("unknown method accepted")
	}
	if err := retrieve.Register("bm25", nil); err == nil {
		t.Error("duplicate registration accepted")
	}
}

func TestVectorBatchEqualsSingleAndBruteForce(t *testing.T) {
	ix, qs := openSynth(t)
	m, _ := retrieve.New("vector", ix)
	batch, err := m.(retrieve.BatchMethod).RetrieveBatch(context.Background(), qs, 7)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range qs {
		one, err := m.Retrieve(context.Background(), q, 7)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(one, batch[i]) {
			t.Fatalf("query %d: single %v, batch %v", i, one, batch[i])
		}
		v, err := ix.EmbedQuery(context.Background(), q.Text)
		if errors.Is(err, index.ErrEmptyEmbedding) {
			if len(one) != 0 {
				t.Fatalf("query %d has no LSA terms but %d hits", i, len(one))
			}
			continue
		}
		top := kernels.NewTopK(7)
		for n := 0; n < ix.N(); n++ {
			var s float64
			for j, x := range ix.Vector(n) {
				s += float64(x) * float64(v[j])
			}
			top.Push(int32(n), float32(s))
		}
		for r, h := range top.Results() {
			if d := h.Score - one[r].Score; d > 1e-5 || d < -1e-5 {
				t.Fatalf("query %d rank %d: %v vs brute force %v", i, r, one[r], h)
			}
		}
	}
}

func TestEmptyQueries(t *testing.T) {
	ix, _ := openSynth(t)
	for _, name := range retrieve.Names() {
		m, err := retrieve.New(name, ix)
		if err != nil {
			t.Fatal(err)
		}
		defer retrieve.CloseAll(context.Background(), m)
		if _, err := m.Retrieve(context.Background(), retrieve.Query{Text: "  "}, 5); !errors.Is(err, retrieve.ErrEmptyQuery) {
			t.Errorf("%s: empty query gave %v", name, err)
		}
	}
	m, _ := retrieve.New("vector", ix)
	hits, err := m.Retrieve(context.Background(), retrieve.Query{Text: "zzzqqq unseenword"}, 5)
	if err != nil || len(hits) != 0 {
		t.Errorf("out-of-vocabulary query: %v hits, err %v", hits, err)
	}
}

// TestEvaluateConcurrencyDeterministic runs the same evaluation with 1 and 8
// queries in flight (under -race in make test) and wants identical metrics.
func TestEvaluateConcurrencyDeterministic(t *testing.T) {
	ix, _ := openSynth(t)
	c := synth.Generate(synth.Options{People: 120, Cities: 20, Countries: 5, Bands: 30, Queries: 40, Seed: 4})
	var ms []retrieve.Method
	for _, n := range retrieve.Names() {
		m, err := retrieve.New(n, ix)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	defer retrieve.CloseAll(context.Background(), ms...)
	a, err := eval.Evaluate(context.Background(), ix, c.Queries, ms, eval.Options{Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := eval.Evaluate(context.Background(), ix, c.Queries, ms, eval.Options{Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Methods {
		if !reflect.DeepEqual(a.Methods[i].Metrics, b.Methods[i].Metrics) {
			t.Errorf("%s: metrics differ between concurrency 1 and 8", a.Methods[i].Method)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := eval.Evaluate(ctx, ix, c.Queries, ms, eval.Options{Concurrency: 4}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled evaluation: %v", err)
	}
}

func TestPPRMatchesGraphops(t *testing.T) {
	ix, qs := openSynth(t)
	m, err := retrieve.NewWith("ppr-bm25", ix, withKinds("mentions"))
	if err != nil {
		t.Fatal(err)
	}
	q := qs[0]
	hits, err := m.Retrieve(context.Background(), q, 5)
	if err != nil || len(hits) != 5 {
		t.Fatalf("hits %v err %v", hits, err)
	}
	// reference: min–max BM25 scores as the reset, PPR with damping 0.5
	reset := make([]float64, ix.N())
	lo, hi := math.Inf(1), math.Inf(-1)
	bm := ix.BM25.Search(q.Text, ix.N())
	for _, h := range bm {
		reset[h.Index] = float64(h.Score)
	}
	for _, x := range reset {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	for i := range reset {
		reset[i] = (reset[i] - lo) / (hi - lo)
	}
	po := graphops.DefaultPPROptions()
	po.Damping = 0.5
	pi, _, err := graphops.PersonalizedPageRank(context.Background(), ix.View("mentions"), reset, po)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainst(t, hits, pi)
	if _, err := retrieve.NewWith("ppr", ix, withKinds("citations")); err == nil {
		t.Error("unknown graph kind accepted")
	}
}

// The seeded reset: BM25's top 5 restart the walk, ∝ their BM25 scores
// (or ∝ 1/rank); no other passage gets restart mass.
func TestSeededPPRMatchesGraphops(t *testing.T) {
	ix, qs := openSynth(t)
	q := qs[1]
	bm := ix.BM25.Search(q.Text, 5)
	for _, weight := range []string{retrieve.SeedByScore, retrieve.SeedByRank} {
		o := withKinds("mentions")
		o.FirstStage, o.PPR.SeedWeight, o.PPR.Damping = retrieve.StageBM25, weight, 0.85
		m, err := retrieve.NewWith("ppr", ix, o)
		if err != nil {
			t.Fatal(err)
		}
		hits, err := m.Retrieve(context.Background(), q, 8)
		if err != nil || len(hits) != 8 {
			t.Fatalf("hits %v err %v", hits, err)
		}
		reset := make([]float64, ix.N())
		for r, h := range bm {
			reset[h.Index] = float64(h.Score)
			if weight == retrieve.SeedByRank {
				reset[h.Index] = 1 / float64(r+1)
			}
		}
		po := graphops.DefaultPPROptions()
		po.Damping = 0.85
		pi, _, err := graphops.PersonalizedPageRank(context.Background(), ix.View("mentions"), reset, po)
		if err != nil {
			t.Fatal(err)
		}
		checkAgainst(t, hits, pi)
	}
}

// checkAgainst compares a method's PageRank hits with a reference vector.
func checkAgainst(t *testing.T, hits []kernels.Hit, pi []float64) {
	t.Helper()
	for r, h := range hits {
		if math.Abs(float64(h.Score)-pi[h.Index]) > 1e-6*pi[h.Index] {
			t.Errorf("rank %d: node %d score %v, reference %v", r, h.Index, h.Score, pi[h.Index])
		}
		if r > 0 && pi[h.Index] > pi[hits[r-1].Index] {
			t.Errorf("rank %d out of order", r)
		}
	}
}

// withKinds is DefaultOptions over the given graph kinds.
func withKinds(kinds ...string) retrieve.Options {
	o := retrieve.DefaultOptions()
	o.GraphKinds = kinds
	return o
}

// Answer-only questions are evaluated by answer_recall alone; a question
// with both gold nodes and answers gets both kinds of metric. The answer
// here is a gold node's title, so BM25 on its own title finds it at rank 1.
func TestEvaluateAnswerRecall(t *testing.T) {
	ix, _ := openSynthOnce(t)
	c := synth.Generate(synth.Options{People: 120, Cities: 20, Countries: 5, Bands: 30, Queries: 40, Seed: 4})
	var qs []corpus.Query
	for i, q := range c.Queries[:10] {
		v, _ := ix.Lookup(q.Gold[0])
		title := ix.Title(int(v))
		aq := corpus.Query{ID: q.ID, Text: title, Answers: []string{title}}
		if i%2 == 0 {
			aq.Gold = q.Gold
		}
		qs = append(qs, aq)
	}
	m, _ := retrieve.New("bm25", ix)
	rep, err := eval.Evaluate(context.Background(), ix, qs, []retrieve.Method{m}, eval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mr := rep.Methods[0]
	if mr.Evaluated != 10 || !rep.Answers || !rep.Gold {
		t.Fatalf("evaluated %d, answers %v gold %v", mr.Evaluated, rep.Answers, rep.Gold)
	}
	if got := mr.Metrics["answer_recall@1"]; got != 1 {
		t.Errorf("answer_recall@1 = %v, want 1", got)
	}
	for id, s := range mr.PerQuery {
		_, hasRank := s["ndcg@10"]
		if hasRank != (len(qs[slices.IndexFunc(qs, func(q corpus.Query) bool { return q.ID == id })].Gold) > 0) {
			t.Errorf("query %s: rank metrics present = %v", id, hasRank)
		}
	}
	var sb strings.Builder
	if err := rep.WriteTable(&sb); err != nil || !strings.Contains(sb.String(), "answer_recall@10") {
		t.Errorf("table lacks answer_recall: %v\n%s", err, sb.String())
	}
}
