//go:build cuda

package cuda_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gleaner-rag/gleaner/cuda"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/kernels/kerneltest"
	"github.com/gleaner-rag/gleaner/models/bert"
)

// TestConformance runs the whole conformance suite on the GPU (a machine
// with one: go test -tags cuda ./cuda/). GAT runs on the host through the
// engine's fallback, so no op is skipped.
// It runs twice: GEMMs through cuBLAS (when libcublas loads) and through
// gemm.cu.
func TestConformance(t *testing.T) {
	for _, path := range []struct {
		name string
		o    cuda.Options
	}{{"auto", cuda.Options{}}, {"kernel", cuda.Options{GEMM: cuda.GEMMKernel}}} {
		t.Run(path.name, func(t *testing.T) {
			b, err := cuda.NewWith(0, path.o)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			t.Logf("%s", b.Caps().Device)
			skipped := kerneltest.RunAll(t, b)
			t.Logf("skipped (composed by the engine): %v; allocator %+v", skipped, b.MemoryStats())
		})
	}
}

// The device benchmarks (benchmarks/device/run.sh runs them on a lent GPU):
// each op on the cuda backend and on the cpu backend in one binary, timed
// to Sync, so the ratio comes from one run on one machine. (The
// benchmarks package cannot build with -tags cuda: gorgonia, which head
// training uses, needs cuDNN under that tag.)
func BenchmarkOps(b *testing.B) {
	gpu, err := cuda.New(0)
	if err != nil {
		b.Skip(err)
	}
	defer gpu.Close()
	b.Logf("%s", gpu.Caps().Device)
	for _, p := range []engine.Precision{engine.PrecisionF32, engine.PrecisionTF32, engine.PrecisionBF16} {
		b.Run("gemm-4096-"+p.String()+"/cuda", func(b *testing.B) { benchGemm(b, gpu, 4096, p) })
	}
	if k, err := cuda.NewWith(0, cuda.Options{GEMM: cuda.GEMMKernel}); err == nil {
		b.Run("gemm-4096-fp32/cuda-gemm.cu", func(b *testing.B) { benchGemm(b, k, 4096, engine.PrecisionF32) })
		k.Close()
	}
	for _, be := range []engine.Backend{gpu, cpu.New()} {
		b.Run("axpby-64M/"+be.Name(), func(b *testing.B) { benchAxpby(b, be, 64<<20) })
		b.Run("gemm-1024/"+be.Name(), func(b *testing.B) { benchGemm(b, be, 1024, engine.PrecisionF32) })
		b.Run("flatip-100k×256-b16/"+be.Name(), func(b *testing.B) { benchFlatIP(b, be, 100_000, 256, 16) })
		for _, q := range []int{1, 64} {
			b.Run(fmt.Sprintf("flatip-1M×384-b%d/%s", q, be.Name()), func(b *testing.B) { benchFlatIP(b, be, 1_000_000, 384, q) })
		}
		b.Run("edgeattn-500k-edges/"+be.Name(), func(b *testing.B) { benchEdgeAttention(b, be, 50_000, 10, 4, 16) })
		for _, m := range []int{100, 10_000} {
			b.Run(fmt.Sprintf("smooth-%d×1024/%s", m, be.Name()), func(b *testing.B) { benchSmooth(b, be, m, 1024, 8) })
		}
		b.Run("lowrank-512×2048-r16-512/"+be.Name(), func(b *testing.B) { benchLowRank(b, be, 512, 2048, 16, 512) })
		b.Run("jointattn-86q-347m-600t-d64/"+be.Name(), func(b *testing.B) { benchJointAttention(b, be, 86, 347, 600, 64) })
	}
}

func upload(b *testing.B, be engine.Backend, n int, seed uint64) engine.Buffer {
	b.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, n)
	for i := range x {
		x[i] = rng.Float32()*2 - 1
	}
	buf, err := be.Bind(x)
	if err != nil {
		b.Fatal(err)
	}
	return buf
}

func timed(b *testing.B, be engine.Backend, op func() error) {
	b.Helper()
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
		if err := be.Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

func benchGemm(b *testing.B, be engine.Backend, n int, p engine.Precision) {
	a, x := upload(b, be, n*n, 1), upload(b, be, n*n, 2)
	c, err := be.Alloc(engine.F32, n*n)
	if err != nil {
		b.Fatal(err)
	}
	op := engine.GemmOp{M: n, N: n, K: n, Alpha: 1, A: a, B: x, C: c, Precision: p}
	timed(b, be, func() error { return be.Gemm(op) })
	b.ReportMetric(2*float64(n*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func benchFlatIP(b *testing.B, be engine.Backend, n, d, q int) {
	x, qs := upload(b, be, n*d, 3), upload(b, be, q*d, 4)
	idx, err1 := be.Alloc(engine.I32, q*10)
	sc, err2 := be.Alloc(engine.F32, q*10)
	if err1 != nil || err2 != nil {
		b.Fatal(err1, err2)
	}
	op := engine.FlatIPOp{X: x, Q: qs, N: n, D: d, B: q, K: 10, OutIdx: idx, OutScore: sc}
	timed(b, be, func() error { return be.FlatIP(op) })
}

// benchEdgeAttention is Exphormer's attention over n nodes of deg random
// in-edges each (features from a 64-row table, SeedER's layout), with the
// bytes it must read at least once (K, Q, V rows, indices, output) as a
// bandwidth figure to set beside the device's copy bandwidth.
func benchEdgeAttention(b *testing.B, be engine.Backend, n, deg, heads, hd int) {
	d := heads * hd
	rng := rand.New(rand.NewPCG(5, 6))
	ptr, src, erow := make([]int64, n+1), make([]int32, n*deg), make([]int32, n*deg)
	for i := range n {
		ptr[i+1] = int64((i + 1) * deg)
		for j := range deg {
			src[i*deg+j], erow[i*deg+j] = int32(rng.IntN(n)), int32(rng.IntN(64))
		}
	}
	bind := func(x any) engine.Buffer {
		buf, err := be.Bind(x)
		if err != nil {
			b.Fatal(err)
		}
		return buf
	}
	k, q, v, e := upload(b, be, n*d, 7), upload(b, be, n*d, 8), upload(b, be, n*d, 9), upload(b, be, 64*d, 10)
	out, err := be.Alloc(engine.F32, n*d)
	if err != nil {
		b.Fatal(err)
	}
	op := engine.EdgeAttentionOp{N: n, Heads: heads, HeadDim: hd, Ptr: bind(ptr), Src: bind(src), ERow: bind(erow), K: k, Q: q, V: v, E: e, Out: out}
	timed(b, be, func() error { return be.EdgeAttention(op) })
	bytes := float64(4*n*d*4 + n*deg*8 + (n+1)*8)
	b.ReportMetric(bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

// BenchmarkCrossEncoder is the cross-encoder's latent extraction (bert
// Forward: embeddings, every layer, the hidden states downloaded) for 100
// pairs of 256 tokens with random weights, at each GEMM precision, for
// MiniLM-L6, BERT-base and XLM-R-large (bge-reranker-v2-m3, FastInsight's
// reranker) shapes, in pairs/s and the layers' TFLOP/s (the GEMMs and
// attention products; compare with the device's dense peak).
func BenchmarkCrossEncoder(b *testing.B) {
	gpu, err := cuda.New(0)
	if err != nil {
		b.Skip(err)
	}
	defer gpu.Close()
	shapes := []struct {
		name string
		cfg  bert.Config
	}{
		{"minilm-l6", bert.Config{ModelType: "bert", Layers: 6, Hidden: 384, Heads: 12, Intermediate: 1536}},
		{"bert-base", bert.Config{ModelType: "bert", Layers: 12, Hidden: 768, Heads: 12, Intermediate: 3072}},
		{"xlmr-large", bert.Config{ModelType: "xlm-roberta", Layers: 24, Hidden: 1024, Heads: 16, Intermediate: 4096}},
	}
	const pairs, seq = 100, 256
	for _, sh := range shapes {
		cfg := sh.cfg
		cfg.VocabSize, cfg.MaxPositions, cfg.TypeVocabSize, cfg.LayerNormEps, cfg.HiddenAct = 1000, 514, 2, 1e-5, "gelu"
		if cfg.ModelType == "xlm-roberta" {
			cfg.TypeVocabSize, cfg.PadTokenID = 1, 1
		}
		m, err := bert.New(cfg, bert.RandomTensors(cfg, 1, false), gpu)
		if err != nil {
			b.Fatal(err)
		}
		in := randomBatch(cfg, pairs, seq)
		flops := float64(pairs*seq*cfg.Layers) * (8*float64(cfg.Hidden*cfg.Hidden) + 4*float64(cfg.Hidden*cfg.Intermediate) + 4*float64(seq*cfg.Hidden))
		for _, p := range []engine.Precision{engine.PrecisionF32, engine.PrecisionTF32, engine.PrecisionBF16} {
			m.Precision = p
			b.Run(fmt.Sprintf("%s-%dx%d-%s/cuda", sh.name, pairs, seq, p), func(b *testing.B) {
				timed(b, gpu, func() error { _, _, err := m.Forward(context.Background(), in); return err })
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(pairs/sec, "pairs/s")
				b.ReportMetric(flops/sec/1e12, "TFLOP/s")
			})
		}
		// The same pairs as four concurrent batches of 25 (four retrieval
		// loops): each Forward runs on a queue view, so they overlap on
		// the device's streams; beside the one batch above, the streams' gain.
		m.Precision = engine.PrecisionBF16
		quarter := bert.Batch{IDs: in.IDs[:pairs/4], Types: in.Types[:pairs/4]}
		b.Run(fmt.Sprintf("%s-4x%dx%d-bf16-concurrent/cuda", sh.name, pairs/4, seq), func(b *testing.B) {
			timed(b, gpu, func() error {
				errs := make(chan error, 4)
				for range 4 {
					go func() { _, _, err := m.Forward(context.Background(), quarter); errs <- err }()
				}
				return errors.Join(<-errs, <-errs, <-errs, <-errs)
			})
			b.ReportMetric(pairs/(b.Elapsed().Seconds()/float64(b.N)), "pairs/s")
		})
		m.Close()
	}
}

func randomBatch(cfg bert.Config, pairs, seq int) bert.Batch {
	rng := rand.New(rand.NewPCG(9, 9))
	var in bert.Batch
	for range pairs {
		ids, types := make([]int32, seq), make([]int32, seq)
		for j := range ids {
			ids[j] = int32(2 + rng.IntN(cfg.VocabSize-2))
		}
		in.IDs, in.Types = append(in.IDs, ids), append(in.Types, types)
	}
	return in
}

// benchSmooth is GRanker's smoothing of m latents of width d over a
// random subgraph of deg neighbours per node, with the bytes it must
// move (H read, Out written) as GB/s.
func benchSmooth(b *testing.B, be engine.Backend, m, d, deg int) {
	rng := rand.New(rand.NewPCG(11, 12))
	ptr, idx, degs := make([]int64, m+1), make([]int32, 0, m*deg), make([]float32, m)
	for i := range m {
		for range deg {
			idx = append(idx, int32(rng.IntN(m)))
		}
		ptr[i+1], degs[i] = int64(len(idx)), float32(deg)
	}
	h := upload(b, be, m*d, 13)
	out, err := be.Alloc(engine.F32, m*d)
	if err != nil {
		b.Fatal(err)
	}
	op := engine.SmoothOp{M: m, D: d, AdjPtr: ptr, AdjIdx: idx, Deg: degs, H: h, Out: out, Alpha: 0.2}
	timed(b, be, func() error { return engine.Smooth(be, op) })
	b.ReportMetric(float64(2*m*d*4)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

// benchLowRank is FuseRAG's memory K/V projection (LN(M)·A)·B.
func benchLowRank(b *testing.B, be engine.Backend, l, de, r, dkv int) {
	m, g, beta := upload(b, be, l*de, 14), upload(b, be, de, 15), upload(b, be, de, 16)
	a, bm := upload(b, be, de*r, 17), upload(b, be, r*dkv, 18)
	out, err := be.Alloc(engine.F32, l*dkv)
	if err != nil {
		b.Fatal(err)
	}
	op := engine.LowRankOp{L: l, De: de, R: r, Dkv: dkv, M: m, Gamma: g, Beta: beta, A: a, B: bm, Out: out, Eps: 1e-5}
	timed(b, be, func() error { return engine.LowRankProject(be, op) })
}

// benchJointAttention is one decoder head over [memory; text] keys,
// causal over the text (FuseRAG's prefill).
func benchJointAttention(b *testing.B, be engine.Backend, n, lm, lt, d int) {
	q, km, vm := upload(b, be, n*d, 19), upload(b, be, lm*d, 20), upload(b, be, lm*d, 21)
	kt, vt := upload(b, be, lt*d, 22), upload(b, be, lt*d, 23)
	out, err := be.Alloc(engine.F32, n*d)
	if err != nil {
		b.Fatal(err)
	}
	op := engine.JointAttentionOp{N: n, Lm: lm, Lt: lt, D: d, Dv: d, Q: q, KMem: km, VMem: vm, KText: kt, VText: vt, Out: out, Causal: true}
	timed(b, be, func() error { return engine.JointAttention(be, op) })
}

// benchAxpby streams n floats in twice and out once (STREAM's triad): the
// device's attainable copy bandwidth, beside which the sparse kernels'
// GB/s are read.
func benchAxpby(b *testing.B, be engine.Backend, n int) {
	x, y := upload(b, be, n, 24), upload(b, be, n, 25)
	out, err := be.Alloc(engine.F32, n)
	if err != nil {
		b.Fatal(err)
	}
	op := engine.AxpbyOp{N: n, Alpha: 1, X: x, Beta: 2, Y: y, Out: out}
	timed(b, be, func() error { return be.Axpby(op) })
	b.ReportMetric(float64(12*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}
