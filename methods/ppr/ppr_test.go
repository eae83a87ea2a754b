package ppr_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/eval"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/methods/internal/testindex"
	"github.com/gleaner-rag/gleaner/methods/ppr"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
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

// Local push (ppr-solver push) agrees with the exact solver: at the
// default ε the top-10 overlap over the shared questions is at least 0.98
// (the bar), and a filtered push returns only allowed nodes; auto
// pushes from ppr-push-from vertices on, and a dense reset cannot push.
func TestPushAgreesWithExact(t *testing.T) {
	ix, qs := testindex.Shared(t)
	exact := testindex.Method(t, ix, "ppr", "ppr-solver", "exact")
	push := testindex.Method(t, ix, "ppr", "ppr-solver", "push")
	autoPush := testindex.Method(t, ix, "ppr", "ppr-push-from", "1")
	autoExact := testindex.Method(t, ix, "ppr") // the shared index is below 20,000 vertices
	var overlap float64
	for _, q := range qs {
		want, err := exact.Retrieve(context.Background(), q, 10)
		if err != nil {
			t.Fatal(err)
		}
		got, err := push.Retrieve(context.Background(), q, 10)
		if err != nil || len(got) != len(want) {
			t.Fatalf("push: %d hits (%v), exact %d", len(got), err, len(want))
		}
		overlap += eval.Overlap(got, want)
		if a, _ := autoPush.Retrieve(context.Background(), q, 10); !slices.Equal(a, got) {
			t.Fatalf("auto from 1 vertex %v, push %v", a, got)
		}
		if a, _ := autoExact.Retrieve(context.Background(), q, 10); !slices.Equal(a, want) {
			t.Fatalf("auto below the threshold %v, exact %v", a, want)
		}
	}
	if mean := overlap / float64(len(qs)); mean < 0.98 {
		t.Fatalf("top-10 overlap of push with exact %.3f over %d questions, want ≥ 0.98", mean, len(qs))
	}
	allow := filter.NewSet(ix.N(), evens(ix.N())...)
	q := qs[0]
	q.Allow = allow
	hits, err := push.Retrieve(context.Background(), q, 20)
	if err != nil || len(hits) != 20 {
		t.Fatalf("filtered push: %v %v", hits, err)
	}
	for _, h := range hits {
		if !allow.Has(int(h.Index)) {
			t.Fatalf("filtered push returned node %d", h.Index)
		}
	}
	if _, err := testindex.NewMethod(ix, "ppr", "ppr-solver", "push", "ppr-reset", "dense"); !errors.Is(err, retrieve.ErrInvalid) {
		t.Fatalf("push with a dense reset: %v", err)
	}
	for _, eps := range []string{"0", "1e-300", "1", "NaN"} {
		if _, err := testindex.NewMethod(ix, "ppr", "ppr-push-eps", eps); err == nil {
			t.Errorf("ppr-push-eps %s accepted", eps)
		}
	}
}

func evens(n int) []int32 {
	var out []int32
	for v := 0; v < n; v += 2 {
		out = append(out, int32(v))
	}
	return out
}
