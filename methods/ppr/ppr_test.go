package ppr_test

import (
	"context"
	"math"
	"testing"

	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/methods/internal/testindex"
	"github.com/gleaner-rag/gleaner/methods/ppr"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func TestMain(m *testing.M) { testindex.Main(m) }

func TestPPRMatchesGraphops(t *testing.T) {
	ix, qs := testindex.Shared(t)
	m := testindex.Method(t, ix, "ppr-bm25", "graph-kind", "mentions")
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
	if _, err := testindex.NewMethod(ix, "ppr", "graph-kind", "citations"); err == nil {
		t.Error("unknown graph kind accepted")
	}
}

// The seeded reset: BM25's top 5 restart the walk, ∝ their BM25 scores
// (or ∝ 1/rank); no other passage gets restart mass.
func TestSeededPPRMatchesGraphops(t *testing.T) {
	ix, qs := testindex.Shared(t)
	q := qs[1]
	bm := ix.BM25.Search(q.Text, 5)
	for _, weight := range []string{ppr.SeedByScore, ppr.SeedByRank} {
		o := ppr.DefaultOptions()
		o.GraphKinds, o.Stage.Kind, o.SeedWeight, o.Damping = []string{"mentions"}, retrieve.StageBM25, weight, 0.85
		m, err := ppr.New(ix, testindex.Env(), o)
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
			if weight == ppr.SeedByRank {
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
func checkAgainst(t *testing.T, hits []retrieve.Hit, pi []float64) {
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
