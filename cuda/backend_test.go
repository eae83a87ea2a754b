//go:build cuda

package cuda_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/gleaner-rag/gleaner/cuda"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/kernels/kerneltest"
)

// TestConformance runs the whole conformance suite on the GPU (a machine
// with one: go test -tags cuda ./cuda/). GAT runs on the host through the
// engine's fallback, so no op is skipped.
func TestConformance(t *testing.T) {
	b, err := cuda.New(0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	skipped := kerneltest.RunAll(t, b)
	t.Logf("skipped (composed by the engine): %v; allocator %+v", skipped, b.PoolStats())
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
	for _, be := range []engine.Backend{gpu, cpu.New()} {
		b.Run("gemm-1024/"+be.Name(), func(b *testing.B) { benchGemm(b, be, 1024) })
		b.Run("flatip-100k×256-b16/"+be.Name(), func(b *testing.B) { benchFlatIP(b, be, 100_000, 256, 16) })
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

func benchGemm(b *testing.B, be engine.Backend, n int) {
	a, x := upload(b, be, n*n, 1), upload(b, be, n*n, 2)
	c, err := be.Alloc(engine.F32, n*n)
	if err != nil {
		b.Fatal(err)
	}
	op := engine.GemmOp{M: n, N: n, K: n, Alpha: 1, A: a, B: x, C: c}
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
