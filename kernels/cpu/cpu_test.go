package cpu_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/kernels/kerneltest"
)

func TestConformance(t *testing.T) {
	t.Logf("backend: %s", cpu.New().Caps().Device)
	if skipped := kerneltest.RunAll(t, cpu.New()); len(skipped) > 0 {
		t.Errorf("the cpu backend must implement every op; skipped %v", skipped)
	}
}

// partial is a backend still landing op by op: its edge attention is not
// there yet.
type partial struct{ *cpu.Backend }

func (partial) EdgeAttention(engine.EdgeAttentionOp) error { return engine.ErrNotImplemented }

// An op that returns ErrNotImplemented is skipped and listed, not failed.
func TestConformanceSkipsMissingOps(t *testing.T) {
	var skipped []string
	t.Run("partial", func(t *testing.T) { skipped = kerneltest.RunAll(t, partial{cpu.New()}) })
	if len(skipped) != 1 || skipped[0] != "EdgeAttention" {
		t.Errorf("skipped %v, want [EdgeAttention]", skipped)
	}
}

func TestRegistry(t *testing.T) {
	b, err := engine.Open(cpu.Name)
	if err != nil || b.Name() != "cpu" {
		t.Fatalf("cpu backend: %v, %v", b, err)
	}
}

// TestBoundGemmConcurrent: goroutines multiplying by one weight
// (BindWeight) at once share its packed copy (made once, under the
// buffer's lock) and all get the same product, which matches float64.
func TestBoundGemmConcurrent(t *testing.T) {
	be := cpu.New()
	m, n, k := 16, 64, 48
	w := make([]float32, n*k)
	a := make([]float32, m*k)
	for i := range w {
		w[i] = float32(i%13) - 6
	}
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	bb, err := be.BindWeight(w)
	if err != nil {
		t.Fatal(err)
	}
	run := func() []float32 {
		ab, _ := engine.Upload(be, a)
		cb, _ := be.Alloc(engine.F32, m*n)
		if err := be.Gemm(engine.GemmOp{TransB: true, M: m, N: n, K: k, Alpha: 1, A: ab, B: bb, C: cb}); err != nil {
			t.Error(err)
			return nil
		}
		out := make([]float32, m*n)
		if err := be.Download(out, cb, 0); err != nil {
			t.Error(err)
		}
		return out
	}
	results := make([][]float32, 8)
	var wg sync.WaitGroup
	for g := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[g] = run() }()
	}
	wg.Wait()
	want := run()
	for g, r := range results {
		if !slices.Equal(r, want) {
			t.Fatalf("goroutine %d got a different product", g)
		}
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64 // small integers: exact in float32 too
			for p := 0; p < k; p++ {
				s += float64(a[i*k+p]) * float64(w[j*k+p])
			}
			if float64(want[i*n+j]) != s {
				t.Fatalf("C[%d,%d] = %v, want %v", i, j, want[i*n+j], s)
			}
		}
	}
}
