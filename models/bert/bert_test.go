package bert

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/kernels"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/models/safetensors"
)

func tiny(kind string) Config {
	return Config{ModelType: kind, VocabSize: 50, Hidden: 16, Layers: 2, Heads: 4, Intermediate: 32,
		MaxPositions: 40, TypeVocabSize: 2, LayerNormEps: 1e-5, PadTokenID: 1, HiddenAct: "gelu", NumLabels: 1}
}

// refForward is the float64 reference encoder for one sequence.
func refForward(c Config, t map[string]safetensors.Tensor, ids, types []int32) [][]float64 {
	pre, h, n := c.prefix(), c.Hidden, len(ids)
	w := func(name string) []float32 { return t[name].Data }
	x := make([][]float64, n)
	for p, id := range ids {
		x[p] = make([]float64, h)
		for j := 0; j < h; j++ {
			x[p][j] = float64(w(pre + "embeddings.word_embeddings.weight")[int(id)*h+j]) +
				float64(w(pre + "embeddings.position_embeddings.weight")[c.positionID(p)*h+j]) +
				float64(w(pre + "embeddings.token_type_embeddings.weight")[int(types[p])*h+j])
		}
		x[p] = ln(x[p], w(pre+"embeddings.LayerNorm.weight"), w(pre+"embeddings.LayerNorm.bias"), c.LayerNormEps)
	}
	for i := 0; i < c.Layers; i++ {
		l := pre + "encoder.layer." + string(rune('0'+i)) + "."
		q, k, v := lins(x, w(l+"attention.self.query.weight"), w(l+"attention.self.query.bias")),
			lins(x, w(l+"attention.self.key.weight"), w(l+"attention.self.key.bias")),
			lins(x, w(l+"attention.self.value.weight"), w(l+"attention.self.value.bias"))
		ctx := attend(q, k, v, c.Heads)
		o := lins(ctx, w(l+"attention.output.dense.weight"), w(l+"attention.output.dense.bias"))
		for p := range x {
			for j := range o[p] {
				o[p][j] += x[p][j]
			}
			x[p] = ln(o[p], w(l+"attention.output.LayerNorm.weight"), w(l+"attention.output.LayerNorm.bias"), c.LayerNormEps)
		}
		f := lins(x, w(l+"intermediate.dense.weight"), w(l+"intermediate.dense.bias"))
		for p := range f {
			for j, z := range f[p] {
				f[p][j] = 0.5 * z * (1 + math.Erf(z/math.Sqrt2))
			}
		}
		f = lins(f, w(l+"output.dense.weight"), w(l+"output.dense.bias"))
		for p := range x {
			for j := range f[p] {
				f[p][j] += x[p][j]
			}
			x[p] = ln(f[p], w(l+"output.LayerNorm.weight"), w(l+"output.LayerNorm.bias"), c.LayerNormEps)
		}
	}
	return x
}

func lins(x [][]float64, wt, b []float32) [][]float64 {
	in := len(x[0])
	out := len(b)
	y := make([][]float64, len(x))
	for p := range x {
		y[p] = make([]float64, out)
		for o := 0; o < out; o++ {
			s := float64(b[o])
			for i := 0; i < in; i++ {
				s += float64(wt[o*in+i]) * x[p][i]
			}
			y[p][o] = s
		}
	}
	return y
}

func ln(x []float64, g, b []float32, eps float64) []float64 {
	var m, v float64
	for _, z := range x {
		m += z
	}
	m /= float64(len(x))
	for _, z := range x {
		v += (z - m) * (z - m)
	}
	v /= float64(len(x))
	out := make([]float64, len(x))
	for j, z := range x {
		out[j] = (z-m)/math.Sqrt(v+eps)*float64(g[j]) + float64(b[j])
	}
	return out
}

func attend(q, k, v [][]float64, heads int) [][]float64 {
	n, h := len(q), len(q[0])
	hd := h / heads
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, h)
	}
	for hh := 0; hh < heads; hh++ {
		for i := 0; i < n; i++ {
			s := make([]float64, n)
			mx := math.Inf(-1)
			for j := 0; j < n; j++ {
				for d := 0; d < hd; d++ {
					s[j] += q[i][hh*hd+d] * k[j][hh*hd+d]
				}
				s[j] /= math.Sqrt(float64(hd))
				mx = math.Max(mx, s[j])
			}
			var z float64
			for j := range s {
				s[j] = math.Exp(s[j] - mx)
				z += s[j]
			}
			for j := 0; j < n; j++ {
				for d := 0; d < hd; d++ {
					out[i][hh*hd+d] += s[j] / z * v[j][hh*hd+d]
				}
			}
		}
	}
	return out
}

func TestForwardMatchesReference(t *testing.T) {
	for _, kind := range []string{"bert", "xlm-roberta"} {
		cfg := tiny(kind)
		tensors := RandomTensors(cfg, 3, true)
		dir := filepath.Join(t.TempDir(), kind)
		if err := Save(dir, cfg, tensors); err != nil {
			t.Fatal(err)
		}
		m, err := Load(dir, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(9, 9))
		var batch Batch
		for _, n := range []int{7, 1, 13, 4} { // padded batch of uneven lengths
			ids, types := make([]int32, n), make([]int32, n)
			for p := range ids {
				ids[p] = int32(2 + rng.IntN(cfg.VocabSize-2))
				if p > n/2 {
					types[p] = 1
				}
			}
			batch.IDs, batch.Types = append(batch.IDs, ids), append(batch.Types, types)
		}
		hidden, s, err := m.Forward(context.Background(), batch)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for b, ids := range batch.IDs {
			ref := refForward(cfg, tensors, ids, batch.Types[b])
			for p := range ids {
				for j := 0; j < cfg.Hidden; j++ {
					got := float64(hidden[(b*s+p)*cfg.Hidden+j])
					worst = math.Max(worst, math.Abs(got-ref[p][j])/(1+math.Abs(ref[p][j])))
				}
			}
		}
		// float32 through two layers of O(1) activations: relative error ≤ 1e-4
		if worst > 1e-4 || worst != worst {
			t.Errorf("%s: worst relative error %.3g", kind, worst)
		}
		t.Logf("%s: worst relative error vs float64 reference %.2e", kind, worst)
		if m.Head == nil || m.Head.Validate() != nil {
			t.Errorf("%s: head not loaded", kind)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	cfg := tiny("bert")
	tensors := RandomTensors(cfg, 1, false)
	delete(tensors, "bert.encoder.layer.1.output.dense.bias")
	if _, err := New(cfg, tensors, cpu.New()); err == nil {
		t.Error("missing weight accepted")
	}
	bad := cfg
	bad.Heads = 5
	if _, err := New(bad, RandomTensors(cfg, 1, false), cpu.New()); err == nil {
		t.Error("hidden not divisible by heads accepted")
	}
	m, _ := New(cfg, RandomTensors(cfg, 1, false), cpu.New())
	if _, _, err := m.Forward(context.Background(), Batch{IDs: [][]int32{{1, 99}}}); err == nil {
		t.Error("token id outside the vocabulary accepted")
	}
	if m.Head != nil {
		t.Error("bi-encoder has a head")
	}
	nan := RandomTensors(cfg, 1, true)
	nan["bert.encoder.layer.0.attention.self.query.weight"].Data[3] = float32(math.NaN())
	if _, err := New(cfg, nan, cpu.New()); err == nil || !strings.Contains(err.Error(), "attention.self.query.weight") {
		t.Errorf("NaN weight: %v", err)
	}
}

// TestForwardIndependentOfBatch: on a CPU with the packed GEMM kernel, a
// sequence's hidden states are bit-identical whether it runs alone or in
// a batch of 16 (640 rows per product): every kernel of the forward sums a
// row in an order its batch does not change. Elsewhere the BLAS decides,
// and the test only logs the difference.
func TestForwardIndependentOfBatch(t *testing.T) {
	cfg := Config{ModelType: "bert", VocabSize: 60, Hidden: 64, Layers: 2, Heads: 4, Intermediate: 128,
		MaxPositions: 64, TypeVocabSize: 2, LayerNormEps: 1e-12, HiddenAct: "gelu", NumLabels: 1}
	m, err := New(cfg, RandomTensors(cfg, 5, true), cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 11))
	var batch Batch
	for b := 0; b < 16; b++ {
		ids, types := make([]int32, 40), make([]int32, 40)
		for p := range ids {
			ids[p] = int32(2 + rng.IntN(cfg.VocabSize-2))
		}
		batch.IDs, batch.Types = append(batch.IDs, ids), append(batch.Types, types)
	}
	all, s, err := m.Forward(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []int{0, 7, 15} {
		one, s1, err := m.Forward(context.Background(), Batch{IDs: batch.IDs[b : b+1], Types: batch.Types[b : b+1]})
		if err != nil {
			t.Fatal(err)
		}
		differ := 0
		for p := 0; p < 40; p++ {
			for j := 0; j < cfg.Hidden; j++ {
				if one[p*cfg.Hidden+j] != all[(b*s+p)*cfg.Hidden+j] {
					differ++
				}
			}
		}
		switch {
		case s1 != s:
			t.Fatalf("padded length %d alone, %d in the batch", s1, s)
		case differ > 0 && kernels.PackedGemmFast():
			t.Errorf("sequence %d: %d hidden values differ between alone and batched", b, differ)
		case differ > 0:
			t.Logf("sequence %d: %d values differ (no packed kernel on this CPU: the BLAS decides)", b, differ)
		}
	}
}
