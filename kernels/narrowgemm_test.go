package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestNarrowGemmMatchesReference checks NarrowGemm against the float64
// reference loop on shapes around the SIMD kernel's 32-column blocks.
func TestNarrowGemmMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, s := range [][3]int{{1, 1, 1}, {7, 32, 32}, {500, 32, 257}, {3000, 64, 32}, {513, 33, 17}, {0, 8, 8}} {
		m, n, k := s[0], s[1], s[2]
		a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range b {
			b[i] = float32(rng.NormFloat64())
		}
		if err := NarrowGemm(a, b, c, m, n, k); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var want, mag float64
				for p := 0; p < k; p++ {
					want += float64(a[i*k+p]) * float64(b[p*n+j])
					mag += math.Abs(float64(a[i*k+p]) * float64(b[p*n+j]))
				}
				// float32 accumulation: error ≤ k·ε·Σ|terms|
				if d := math.Abs(float64(c[i*n+j]) - want); d > float64(k)*6e-8*mag+1e-6 {
					t.Fatalf("%v: C[%d,%d] = %g, reference %g", s, i, j, c[i*n+j], want)
				}
			}
		}
	}
	if err := NarrowGemm(make([]float32, 3), make([]float32, 4), make([]float32, 4), 2, 2, 2); err == nil {
		t.Fatal("short A accepted")
	}
}
