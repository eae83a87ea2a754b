package retrieve_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/kernels"
	"github.com/gleaner-rag/gleaner/models/ort"
	"github.com/gleaner-rag/gleaner/models/testmodel"
	"github.com/gleaner-rag/gleaner/retrieve"
)

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
	ix, qs := openSynth(t)
	dir := writeCrossEncoder(t)
	runtimes := []string{"native"}
	if _, err := ort.LibraryPath(); err == nil {
		runtimes = append(runtimes, "ort")
	} else {
		t.Logf("ONNX Runtime absent, native only: %v", err)
	}
	var first [][]int32
	for _, rt := range runtimes {
		m, err := retrieve.NewWith("re2", ix, func() retrieve.Options { o := retrieve.DefaultOptions(); o.Model, o.Runtime = dir, rt; return o }())
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
	if _, err := retrieve.NewWith("re2", ix, func() retrieve.Options {
		o := retrieve.DefaultOptions()
		o.Model = filepath.Join(dir, "missing")
		return o
	}()); err == nil {
		t.Error("missing model folder accepted")
	}
}

// TestCrossEncoderPrecision: a reduced GEMM precision is a permission the
// native runtime takes (the cpu backend computes float32, so the ranking
// is unchanged); ONNX Runtime and the lexical encoder refuse it.
func TestCrossEncoderPrecision(t *testing.T) {
	ix, qs := openSynth(t)
	dir := writeCrossEncoder(t)
	rank := func(p engine.Precision) []kernels.Hit {
		o := retrieve.DefaultOptions()
		o.Model, o.Runtime, o.Precision = dir, "native", p
		m, err := retrieve.NewWith("re2", ix, o)
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
	o := retrieve.DefaultOptions()
	o.Precision = engine.PrecisionTF32
	if _, err := retrieve.NewWith("re2", ix, o); err == nil {
		t.Fatal("tf32 without a Model accepted")
	}
	if _, err := ort.LibraryPath(); err == nil {
		o.Model, o.Runtime = dir, "ort"
		if _, err := retrieve.NewWith("re2", ix, o); err == nil {
			t.Fatal("tf32 on ONNX Runtime accepted")
		}
	}
}
