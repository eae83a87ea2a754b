package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemmNNMatchesReference checks every small-GEMM kernel against a
// float64 product on shapes that hit each tile and tail: rows in and past
// blocks of four, columns in blocks of 64, of 16 and masked, k from 1 to
// beyond a head dimension. Tolerance: k·2⁻²³·Σ|a·b| (float32 summation).
func TestGemmNNMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for name, impl := range gemmNNImpls {
		for _, m := range []int{1, 3, 4, 5, 9} {
			for _, n := range []int{1, 15, 16, 17, 63, 64, 65, 128, 130} {
				for _, k := range []int{1, 32, 33} {
					a, b := randSlice(rng, m*k), randSlice(rng, k*n)
					c := randSlice(rng, m*n) // stale values must be overwritten
					impl(a, b, c, m, n, k)
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							var s, mag float64
							for p := 0; p < k; p++ {
								s += float64(a[i*k+p]) * float64(b[p*n+j])
								mag += math.Abs(float64(a[i*k+p]) * float64(b[p*n+j]))
							}
							if d := math.Abs(float64(c[i*n+j]) - s); !(d <= float64(k)*0x1p-23*mag+1e-30) {
								t.Fatalf("%s %d×%d×%d: C[%d,%d] = %g, want %g", name, m, n, k, i, j, c[i*n+j], s)
							}
						}
					}
				}
			}
		}
	}
}

// TestSoftmaxMatchesReference checks every softmax kernel against float64
// on rows of 1 to 130 values (tails of 8 and 16 lanes), spread over ±40.
func TestSoftmaxMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	for name, impl := range softmaxImpls {
		for cols := 1; cols <= 130; cols++ {
			x := randSlice(rng, 3*cols)
			for i := range x {
				x[i] *= 40
			}
			got := append([]float32(nil), x...)
			impl(got, 3, cols)
			for r := 0; r < 3; r++ {
				row := x[r*cols : (r+1)*cols]
				m := math.Inf(-1)
				for _, v := range row {
					m = math.Max(m, float64(v))
				}
				var s float64
				for _, v := range row {
					s += math.Exp(float64(v) - m)
				}
				for j, v := range row {
					want := math.Exp(float64(v)-m) / s
					if d := math.Abs(float64(got[r*cols+j]) - want); d > 1e-6*want+1e-30 && d > 1e-12 {
						t.Fatalf("%s cols %d: p[%d,%d] = %g, want %g", name, cols, r, j, got[r*cols+j], want)
					}
				}
			}
		}
	}
}

func randSlice(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}
