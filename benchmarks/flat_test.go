package benchmarks

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gleaner-rag/gleaner/kernels"
)

var large = flag.Bool("large", false, "include the 1M-row matrices (needs ≈ 4 GiB per 1024-d matrix)")

func randomMatrix(n, d int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	m := make([]float32, n*d)
	for i := range m {
		m[i] = float32(rng.NormFloat64())
	}
	return m
}

// BenchmarkFlatIP measures exact top-10 inner-product search: GB/s of
// matrix read per batch, beside the floor set by copy bandwidth.
func BenchmarkFlatIP(b *testing.B) {
	sizes := []int{10_000, 100_000}
	if *large {
		sizes = append(sizes, 1_000_000)
	}
	bw := MachineCopyBandwidth()
	b.Logf("dot kernel %s; copy bandwidth %.1f GB/s", kernels.DotBlockImpl(), bw/1e9)
	for _, n := range sizes {
		for _, d := range []int{256, 384, 1024} {
			X := randomMatrix(n, d, uint64(n+d))
			for _, batch := range []int{1, 64} {
				Q := randomMatrix(batch, d, 7)
				b.Run(fmt.Sprintf("n=%d/d=%d/batch=%d", n, d, batch), func(b *testing.B) {
					bytes := float64(n * d * 4)
					for b.Loop() {
						if _, err := kernels.FlatIP(context.Background(), X, n, d, Q, batch, 10, 0); err != nil {
							b.Fatal(err)
						}
					}
					sec := b.Elapsed().Seconds() / float64(b.N)
					b.ReportMetric(bytes/sec/1e9, "GB/s")
					b.ReportMetric(bytes/bw*1e3, "floor-ms")
					b.ReportMetric(sec/(bytes/bw), "x-floor")
					b.ReportMetric(float64(batch)/sec, "queries/s")
					b.ReportMetric(2*bytes/4*float64(batch)/sec/1e9, "GFLOP/s")
				})
			}
		}
	}
}
