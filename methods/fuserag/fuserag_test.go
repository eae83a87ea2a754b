package fuserag_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/methods/fuserag"
	"github.com/gleaner-rag/gleaner/methods/internal/testindex"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func TestMain(m *testing.M) { testindex.Main(m) }

// fuserag's evidence set is the greedy walk from BM25's top Start nodes
// with rel = BM25/max BM25 and cosine novelty; K=5 is a prefix of K=10.
func TestFuseRAGEvidenceMatchesGreedyOperator(t *testing.T) {
	ix, qs := testindex.Shared(t)
	o := fuserag.DefaultOptions()
	o.GraphKinds = []string{"mentions"}
	m, err := fuserag.New(ix, testindex.Env(), o)
	if err != nil {
		t.Fatal(err)
	}
	m5 := testindex.Method(t, ix, "fuserag", "graph-kind", "mentions", "fuserag-k", "5")
	d := ix.Meta.Dims
	walked := 0
	for _, q := range qs[:10] {
		hits, err := m.Retrieve(context.Background(), q, 100)
		if err != nil {
			t.Fatal(err)
		}
		sc := make([]float64, ix.N())
		top := 0.0
		for _, h := range ix.BM25.Search(q.Text, ix.N()) {
			sc[h.Index] = float64(h.Score)
			top = math.Max(top, sc[h.Index])
		}
		var start []int32
		for _, h := range ix.BM25.Search(q.Text, o.Start) {
			start = append(start, h.Index)
		}
		ev, err := graphops.GreedyEvidence(context.Background(), ix.View("mentions"), start,
			graphops.GreedyOptions{Budget: 10, Lambda: o.Lambda, Stop: math.Inf(-1)},
			graphops.GreedyScores{
				Rel: func(_, v int32, _ int64) float64 { return sc[v] / top },
				Sim: func(u, v int32) float64 {
					s := 0.0
					for j := 0; j < d; j++ {
						s += float64(ix.Vectors[int(u)*d+j]) * float64(ix.Vectors[int(v)*d+j])
					}
					return s
				},
			})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) > o.Start {
			walked++
		}
		got := make([]int32, len(hits))
		for i, h := range hits {
			got[i] = h.Index
		}
		if !slices.Equal(got, ev.Nodes) {
			t.Fatalf("query %q: method %v, operator %v", q.ID, got, ev.Nodes)
		}
		h5, _ := m5.Retrieve(context.Background(), q, 100)
		if len(h5) != min(5, len(hits)) || !slices.EqualFunc(h5, hits[:len(h5)], func(a, b retrieve.Hit) bool { return a.Index == b.Index }) {
			t.Fatalf("query %q: K=5 %v is not the prefix of K=10 %v", q.ID, h5, hits)
		}
		for _, budget := range []int{32, 64} {
			c, err := m.(retrieve.ContextBuilder).BuildContext(context.Background(), q, budget)
			if err != nil {
				t.Fatal(err)
			}
			if c.Tokens > budget {
				t.Fatalf("anchors of %d tokens exceed τ=%d", c.Tokens, budget)
			}
			for _, v := range c.Nodes {
				if !slices.Contains(got, v) {
					t.Fatalf("anchor from node %d outside B_q %v", v, got)
				}
			}
		}
	}
	if walked == 0 {
		t.Fatal("no query's walk left its start nodes: the test checks nothing")
	}
	bad := o
	bad.Budget = 0
	if _, err := fuserag.New(ix, testindex.Env(), bad); err == nil {
		t.Error("K=0 accepted")
	}
}

// A budget beyond the graph is not a size: K = 2⁴⁰ walks until no edge
// leaves the set (a request once sized a map by it and took 15 GB), and the
// scores still fall by one per position.
func TestFuseRAGBudgetBeyondTheGraph(t *testing.T) {
	ix, qs := testindex.Shared(t)
	m := testindex.Method(t, ix, "fuserag", "graph-kind", "mentions", "fuserag-k", "1099511627776")
	hits, err := m.Retrieve(context.Background(), qs[0], ix.N())
	if err != nil || len(hits) == 0 || len(hits) > ix.N() {
		t.Fatalf("%d hits, %v", len(hits), err)
	}
	for i, h := range hits {
		if h.Score != float32(ix.N()-i) {
			t.Fatalf("hit %d scores %v, want %d", i, h.Score, ix.N()-i)
		}
	}
}
