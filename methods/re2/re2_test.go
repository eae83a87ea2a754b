package re2_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/methods/internal/testindex"
	"github.com/gleaner-rag/gleaner/models/ort"
	"github.com/gleaner-rag/gleaner/models/testmodel"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func TestMain(m *testing.M) { testindex.Main(m) }

func TestRe2RerankesBM25TopHundred(t *testing.T) {
	ix, qs := testindex.Shared(t)
	m := testindex.Method(t, ix, "re2", "first-stage", "bm25")
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

// re2 follows the first stage it is given: it reranks exactly the
// stage's top (bmax of them).
func TestRe2RerankesItsStage(t *testing.T) {
	ix, qs := testindex.Shared(t)
	for _, stage := range retrieve.Stages() {
		first := testindex.Method(t, ix, stage)
		re2 := testindex.Method(t, ix, "re2", "first-stage", stage, "bmax", "7")
		for _, q := range qs[:5] {
			want := map[int32]bool{}
			for _, v := range testindex.Ranking(t, first, q, 7) {
				want[v] = true
			}
			for _, v := range testindex.Ranking(t, re2, q, 7) {
				if !want[v] {
					t.Errorf("stage %s: re2 returned node %d outside the stage's top 7", stage, v)
				}
			}
		}
	}
	if _, err := testindex.NewMethod(ix, "re2-vector", "first-stage", "bm25"); err == nil {
		t.Error("re2-vector accepted a first stage: it fixes vector search")
	}
}

// writeCrossEncoder writes a random cross-encoder over the synthetic
// corpus's words and returns its folder.
func writeCrossEncoder(t *testing.T) string {
	t.Helper()
	c := synth.Generate(synth.Options{People: 120, Cities: 20, Countries: 5, Bands: 30, Queries: 40, Seed: 4})
	dir := filepath.Join(t.TempDir(), "model")
	if _, err := testmodel.Write(dir, testmodel.NodeTexts(c), testmodel.Options{Cross: true}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRe2WithTransformerNativeAndORT reranks with a generated random
// cross-encoder on both runtimes: the rankings must agree.
func TestRe2WithTransformerNativeAndORT(t *testing.T) {
	ix, qs := testindex.Shared(t)
	dir := writeCrossEncoder(t)
	runtimes := []string{"native"}
	if err := ort.Init(); err == nil {
		runtimes = append(runtimes, "ort")
	} else {
		t.Logf("ONNX Runtime absent, native only: %v", err)
	}
	var first [][]int32
	for _, rt := range runtimes {
		m, err := testindex.NewMethod(ix, "re2", "model", dir, "runtime", rt)
		if err != nil {
			t.Fatal(err)
		}
		for qi, q := range qs[:5] {
			hits, err := m.Retrieve(context.Background(), q, 10)
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]int32, len(hits))
			for i, h := range hits {
				ids[i] = h.Index
			}
			if rt == "native" {
				first = append(first, ids)
				continue
			}
			for i := range ids {
				if ids[i] != first[qi][i] {
					t.Errorf("query %d rank %d: ort %d, native %d", qi, i, ids[i], first[qi][i])
				}
			}
		}
		retrieve.CloseAll(context.Background(), m)
	}
	if _, err := testindex.NewMethod(ix, "re2", "model", filepath.Join(dir, "missing")); err == nil {
		t.Error("missing model folder accepted")
	}
}

// TestCrossEncoderPrecision: a reduced GEMM precision is a permission the
// native runtime takes (the cpu backend computes float32, so the ranking
// is unchanged); ONNX Runtime and the lexical encoder refuse it.
func TestCrossEncoderPrecision(t *testing.T) {
	ix, qs := testindex.Shared(t)
	dir := writeCrossEncoder(t)
	rank := func(p engine.Precision) []retrieve.Hit {
		m, err := testindex.NewMethod(ix, "re2", "model", dir, "runtime", "native", "precision", p.String())
		if err != nil {
			t.Fatal(err)
		}
		defer retrieve.CloseAll(context.Background(), m)
		hits, err := m.Retrieve(context.Background(), qs[0], 10)
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}
	// the same ranking; scores equal up to float32 rounding (the
	// scheduler's batches, and so the padded GEMM shapes, may differ
	// between two runs)
	f32, bf16 := rank(engine.PrecisionF32), rank(engine.PrecisionBF16)
	same := len(f32) == len(bf16)
	for i := 0; same && i < len(f32); i++ {
		same = f32[i].Index == bf16[i].Index && math.Abs(float64(f32[i].Score-bf16[i].Score)) <= 1e-5*(1+math.Abs(float64(f32[i].Score)))
	}
	if !same {
		t.Fatalf("cpu with bf16 allowed ranks %v, fp32 %v", bf16, f32)
	}
	if _, err := testindex.NewMethod(ix, "re2", "precision", "tf32"); err == nil {
		t.Fatal("tf32 without a Model accepted")
	}
	if err := ort.Init(); err == nil {
		if _, err := testindex.NewMethod(ix, "re2", "model", dir, "runtime", "ort", "precision", "tf32"); err == nil {
			t.Fatal("tf32 on ONNX Runtime accepted")
		}
	}
}
