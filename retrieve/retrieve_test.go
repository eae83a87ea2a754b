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
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/eval"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/models/lexical"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

func env() retrieve.Env { return retrieve.Env{Backend: cpu.New()} }

var shared struct {
	sync.Once
	dir string
	qs  []retrieve.Query
}

// openIndex opens one synthetic index (no head, no sections), built once
// for the package.
func openIndex(t *testing.T) (*index.Index, []retrieve.Query) {
	t.Helper()
	shared.Do(func() {
		dir, err := os.MkdirTemp("", "gleaner-retrieve-test")
		if err != nil {
			t.Fatal(err)
		}
		c := synth.Generate(synth.Options{People: 120, Cities: 20, Countries: 5, Bands: 30, Queries: 40, Seed: 4})
		lsa := lexical.DefaultLSA()
		lsa.Dims = 24
		if err := index.Build(context.Background(), c, filepath.Join(dir, "ix"), index.WithLSA(lsa), index.WithoutHead()); err != nil {
			t.Fatal(err)
		}
		for _, q := range c.Queries {
			shared.qs = append(shared.qs, retrieve.Query{ID: q.ID, Text: q.Text})
		}
		shared.dir = dir
	})
	if shared.dir == "" {
		t.Fatal("the shared synthetic index failed to build")
	}
	ix, err := index.Open(filepath.Join(shared.dir, "ix"), store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix, shared.qs
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

func ranking(t *testing.T, m retrieve.Method, q retrieve.Query, k int) []int32 {
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

func method(t *testing.T, ix *index.Index, name string, settings ...string) retrieve.Method {
	t.Helper()
	cfg, err := retrieve.NewConfig(name)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(settings); i += 2 {
		if err := cfg.Set(settings[i], settings[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	m, err := retrieve.New(ix, env(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { retrieve.CloseAll(context.Background(), m) })
	return m
}

// The convex hybrid at weight 1 ranks BM25's matches as BM25 does; at
// weight 0 it ranks as vector search.
func TestHybridEnds(t *testing.T) {
	ix, qs := openIndex(t)
	h1, h0 := method(t, ix, "hybrid", "hybrid-weight", "1"), method(t, ix, "hybrid", "hybrid-weight", "0")
	bm, vec := method(t, ix, "bm25"), method(t, ix, "vector")
	for _, q := range qs[:10] {
		if a, b := ranking(t, h1, q, 5), ranking(t, bm, q, 5); !reflect.DeepEqual(a, b) {
			t.Errorf("hybrid weight 1 ranks %v, bm25 %v", a, b)
		}
		if a, b := ranking(t, h0, q, 5), ranking(t, vec, q, 5); !reflect.DeepEqual(a, b) {
			t.Errorf("hybrid weight 0 ranks %v, vector %v", a, b)
		}
	}
}

// The first stages refuse an empty query; vector search gives no hits for
// a query with no known term.
func TestEmptyQueries(t *testing.T) {
	ix, _ := openIndex(t)
	for _, name := range []string{"bm25", "vector", "hybrid"} {
		m := method(t, ix, name)
		if _, err := m.Retrieve(context.Background(), retrieve.Query{Text: "  "}, 5); !errors.Is(err, retrieve.ErrEmptyQuery) || !errors.Is(err, retrieve.ErrInvalid) {
			t.Errorf("%s: empty query gave %v", name, err)
		}
	}
	hits, err := method(t, ix, "vector").Retrieve(context.Background(), retrieve.Query{Text: "zzzqqq unseenword"}, 5)
	if err != nil || len(hits) != 0 {
		t.Errorf("out-of-vocabulary query: %v hits, err %v", hits, err)
	}
}

func TestVectorBatchEqualsSingleAndBruteForce(t *testing.T) {
	ix, qs := openIndex(t)
	m, err := retrieve.NewNamed("vector", ix, env())
	if err != nil {
		t.Fatal(err)
	}
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
		top := engine.NewTopK(7)
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

// Answer-only questions are evaluated by answer_recall alone; a question
// with both gold nodes and answers gets both kinds of metric. The answer
// here is a gold node's title, so BM25 on its own title finds it at rank 1.
func TestEvaluateAnswerRecall(t *testing.T) {
	ix, _ := openIndex(t)
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
	m, _ := retrieve.NewNamed("bm25", ix, env())
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

// A bm25 stage's Run, which takes the top from the postings, returns what
// ranking every node's Scores returns (nodes, order, scores), filtered or
// not, at every depth.
func TestStageRunEqualsRankingOfScores(t *testing.T) {
	ix, qs := openIndex(t)
	st, err := retrieve.NewStage(ix, nil, retrieve.StageOptions{Kind: retrieve.StageBM25, Hybrid: retrieve.DefaultHybrid()})
	if err != nil {
		t.Fatal(err)
	}
	var half []int32
	for v := 0; v < ix.N(); v += 2 {
		half = append(half, int32(v))
	}
	qs = append(qs, retrieve.Query{Text: "no such words zzqx"}, retrieve.Query{Text: "the of"})
	for _, allow := range []*filter.Set{nil, filter.NewSet(ix.N(), half...)} {
		for _, q := range qs {
			q.Allow = allow
			sc, err := st.Scores(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			for _, depth := range []int{1, 2, 10, 100, ix.N() + 1, math.MaxInt} {
				got, err := st.Run(context.Background(), q, depth)
				if err != nil {
					t.Fatal(err)
				}
				if want := st.Ranking(sc, depth); !reflect.DeepEqual(got, want) {
					t.Fatalf("%q (filtered %v), depth %d: Run %v, ranking of Scores %v", q.Text, allow != nil, depth, got, want)
				}
			}
			checkScoreEqualsScores(t, st, q, sc)
		}
	}
}

// checkScoreEqualsScores checks Stage.Score against Scores (want): the
// same array, the matched nodes exactly the positive ones, the same
// ranking at every depth; twice, so the pooled array is seen reused.
func checkScoreEqualsScores(t *testing.T, st *retrieve.Stage, q retrieve.Query, want []float32) {
	t.Helper()
	for range 2 {
		got, err := st.Score(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			if got != nil {
				t.Fatalf("%q: Score %v, Scores nil", q.Text, got.Matched)
			}
			continue
		}
		if !slices.Equal(got.Of, want) {
			t.Fatalf("%q (filtered %v): Score's array differs from Scores'", q.Text, q.Allow != nil)
		}
		var positive []int32
		for v, x := range want {
			if x > 0 {
				positive = append(positive, int32(v))
			}
		}
		if m := slices.Sorted(slices.Values(got.Matched)); !slices.Equal(m, positive) {
			t.Fatalf("%q: matched %d nodes, %d score above 0", q.Text, len(m), len(positive))
		}
		for _, depth := range []int{1, 10, math.MaxInt} {
			if r, w := st.RankScored(got, depth), st.Ranking(want, depth); !reflect.DeepEqual(r, w) {
				t.Fatalf("%q, depth %d: RankScored %v, Ranking %v", q.Text, depth, r, w)
			}
		}
		got.Release()
		got.Release()
	}
}
