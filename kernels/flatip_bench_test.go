package kernels

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
)

// BenchmarkFlatIP times the exact scan over 200,000 × 384 rows at a few
// batch sizes; GFLOP/s is reported so tile changes can be compared.
func BenchmarkFlatIP(b *testing.B) {
	const n, d = 200_000, 384
	rng := rand.New(rand.NewPCG(1, 2))
	X, Q := randMat(rng, n*d), randMat(rng, 256*d)
	for _, nq := range []int{1, 2, 4, 8, 16, 32, 256} {
		b.Run(fmt.Sprintf("b%d", nq), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := FlatIP(context.Background(), X, n, d, Q, nq, 10, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(2*float64(n*d*nq)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkFlatIPQuantized times the scan of the same rows quantized to
// int8 and bf16 at batch 1 and 4 (the kernels in registers; from
// widenMinBatch a block is widened and times as BenchmarkFlatIP's).
func BenchmarkFlatIPQuantized(b *testing.B) {
	const n, d = 200_000, 384
	rng := rand.New(rand.NewPCG(1, 2))
	X, Q := randMat(rng, n*d), randMat(rng, 16*d)
	for _, kind := range engine.QuantKinds() {
		m, err := engine.Quantize(X, n, d, kind)
		if err != nil {
			b.Fatal(err)
		}
		for _, nq := range []int{1, 2, 4, 8, 16} {
			b.Run(fmt.Sprintf("%s/b%d", kind, nq), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := FlatIPQuantized(context.Background(), m, Q, nq, 10, 0); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(2*float64(n*d*nq)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
