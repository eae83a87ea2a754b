package retrieve_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models/lexical"

	"github.com/gleaner-rag/gleaner/retrieve"
)

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

func newMethod(t *testing.T, name string, o retrieve.Options) retrieve.Method {
	t.Helper()
	ix, _ := openSynthOnce(t)
	m, err := retrieve.NewWith(name, ix, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { retrieve.CloseAll(context.Background(), m) })
	return m
}

// Alpha 0 and Beta 0 mean no smoothing and no structure term, exactly as
// the ablation variants, and differ from the defaults.
func TestZeroOptionsAreHonoured(t *testing.T) {
	_, qs := openSynthOnce(t)
	for _, c := range []struct {
		variant string
		set     func(*retrieve.FastInsightOptions)
	}{
		{"fastinsight-alpha0", func(o *retrieve.FastInsightOptions) { o.Alpha = 0 }},
		{"fastinsight-beta0", func(o *retrieve.FastInsightOptions) { o.Beta = 0 }},
	} {
		o := withKinds("mentions")
		c.set(&o.FastInsight)
		zero := newMethod(t, "fastinsight", o)
		variant := newMethod(t, c.variant, withKinds("mentions"))
		def := newMethod(t, "fastinsight", withKinds("mentions"))
		differs := false
		for _, q := range qs[:20] {
			a, b := ranking(t, zero, q, 100), ranking(t, variant, q, 100)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s: option set to 0 ranks %v, the variant %v", c.variant, a, b)
			}
			differs = differs || !reflect.DeepEqual(a, ranking(t, def, q, 100))
		}
		if !differs {
			t.Errorf("%s: 0 gave the default's rankings on 20 queries: the zero was replaced", c.variant)
		}
	}
}

// Zero values that cannot mean anything are errors, never defaults.
func TestZeroOptionsAreRejected(t *testing.T) {
	ix, _ := openSynthOnce(t)
	bad := map[string]func(*retrieve.Options){
		"fastinsight b_max 0": func(o *retrieve.Options) { o.FastInsight.BMax = 0 },
		"fastinsight batch 0": func(o *retrieve.Options) { o.FastInsight.Batch = 0 },
		"gar budget 0":        func(o *retrieve.Options) { o.GAR.Budget = 0 },
		"re2 depth 0":         func(o *retrieve.Options) { o.RerankDepth = 0 },
		"ppr seeds 0":         func(o *retrieve.Options) { o.PPR.Seeds = 0 },
		"ppr damping 0":       func(o *retrieve.Options) { o.PPR.Damping = 0 },
		"ppr reset empty":     func(o *retrieve.Options) { o.PPR.Reset = "" },
		"first stage empty":   func(o *retrieve.Options) { o.FirstStage = "" },
		"hybrid fusion empty": func(o *retrieve.Options) { o.Hybrid.Fusion = "" },
		"hybrid weight 1.5":   func(o *retrieve.Options) { o.Hybrid.Weight = 1.5 },
		"rrf k 0":             func(o *retrieve.Options) { o.Hybrid.Fusion, o.Hybrid.RRFK = retrieve.FusionRRF, 0 },
		"alpha −0.1":          func(o *retrieve.Options) { o.FastInsight.Alpha = -0.1 },
	}
	methods := map[string]string{"fastinsight b_max 0": "fastinsight", "fastinsight batch 0": "fastinsight", "gar budget 0": "gar",
		"re2 depth 0": "re2", "ppr seeds 0": "ppr", "ppr damping 0": "ppr", "ppr reset empty": "ppr", "first stage empty": "gar",
		"hybrid fusion empty": "hybrid", "hybrid weight 1.5": "fastinsight", "rrf k 0": "re2", "alpha −0.1": "fastinsight"}
	for name, set := range bad {
		o := retrieve.DefaultOptions()
		set(&o)
		if _, err := retrieve.NewWith(methods[name], ix, o); err == nil {
			t.Errorf("%s accepted by %s", name, methods[name])
		}
	}
	if _, err := retrieve.NewWith("fastinsight", ix, retrieve.Options{}); err == nil {
		t.Error("the zero Options accepted by fastinsight: its zeros would have been replaced silently")
	}
}

// Budgets beyond the corpus (up to the largest int, as a flag may give)
// rank exactly as a budget of the whole corpus: nothing overflows.
func TestHugeBudgetsEqualWholeCorpus(t *testing.T) {
	ix, qs := openSynthOnce(t)
	set := func(o *retrieve.Options, n int) {
		o.FastInsight.BMax, o.GAR.Budget, o.RerankDepth, o.PPR.Seeds = n, n, n, n
		o.FirstStage, o.Hybrid.Fusion, o.Hybrid.Depth = retrieve.StageHybrid, retrieve.FusionRRF, n
	}
	for _, name := range []string{"fastinsight", "gar", "re2", "ppr"} {
		huge, whole := withKinds("mentions"), withKinds("mentions")
		set(&huge, math.MaxInt)
		set(&whole, ix.N())
		a, b := newMethod(t, name, huge), newMethod(t, name, whole)
		for _, q := range qs[:3] {
			if x, y := ranking(t, a, q, 10), ranking(t, b, q, 10); !reflect.DeepEqual(x, y) {
				t.Fatalf("%s: budgets of MaxInt rank %v, of N %v", name, x, y)
			}
		}
	}
}

// The convex hybrid at weight 1 ranks BM25's matches as BM25 does; at
// weight 0 it ranks as vector search. Every method follows the stage it is
// given: re2 reranks exactly the first stage's top.
func TestFirstStages(t *testing.T) {
	_, qs := openSynthOnce(t)
	o := retrieve.DefaultOptions()
	o.Hybrid.Weight = 1
	h1 := newMethod(t, "hybrid", o)
	o.Hybrid.Weight = 0
	h0 := newMethod(t, "hybrid", o)
	bm, vec := newMethod(t, "bm25", o), newMethod(t, "vector", o)
	for _, q := range qs[:10] {
		if a, b := ranking(t, h1, q, 5), ranking(t, bm, q, 5); !reflect.DeepEqual(a, b) {
			t.Errorf("hybrid weight 1 ranks %v, bm25 %v", a, b)
		}
		if a, b := ranking(t, h0, q, 5), ranking(t, vec, q, 5); !reflect.DeepEqual(a, b) {
			t.Errorf("hybrid weight 0 ranks %v, vector %v", a, b)
		}
	}
	for _, stage := range retrieve.Stages() {
		o := retrieve.DefaultOptions()
		o.FirstStage, o.RerankDepth = stage, 7
		first := newMethod(t, map[string]string{"bm25": "bm25", "vector": "vector", "hybrid": "hybrid"}[stage], o)
		re2 := newMethod(t, "re2", o)
		for _, q := range qs[:5] {
			want := map[int32]bool{}
			for _, v := range ranking(t, first, q, 7) {
				want[v] = true
			}
			got := ranking(t, re2, q, 7)
			for _, v := range got {
				if !want[v] {
					t.Errorf("stage %s: re2 returned node %d outside the stage's top 7", stage, v)
				}
			}
		}
	}
}

// A graph method over an index without edges is an error, not a silent
// copy of its first stage.
func TestGraphMethodsNeedEdges(t *testing.T) {
	c := synth.Generate(synth.Options{People: 40, Cities: 8, Countries: 3, Bands: 8, Queries: 5, Seed: 2})
	c.Edges = nil
	dir := filepath.Join(t.TempDir(), "ix")
	lsa := lexical.DefaultLSA()
	lsa.Dims = 8
	if err := index.Build(context.Background(), c, dir, index.WithLSA(lsa), index.WithoutHead()); err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for _, m := range []string{"ppr", "ppr-bm25", "gar", "fastinsight", "fastinsight-beta0"} {
		if _, err := retrieve.NewWith(m, ix, retrieve.DefaultOptions()); !errors.Is(err, retrieve.ErrNoGraph) {
			t.Errorf("%s over an index without edges: %v", m, err)
		}
	}
	if _, err := retrieve.NewWith("bm25", ix, retrieve.DefaultOptions()); err != nil {
		t.Error(err)
	}
}
