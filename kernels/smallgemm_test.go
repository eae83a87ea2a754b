package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemmNNMatchesReference checks every small-GEMM kernel against a
// float64 product on shapes that hit each tile and tail: rows in and past
// blocks of four, columns in blocks of 64, of 16 and masked, k from 1 to
// beyond a head dimension, packed and with padded strides (whose padding
// in C must stay untouched). Tolerance: k·2⁻²³·Σ|a·b| (float32 summation).
func TestGemmNNMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for name, impl := range gemmNNImpls {
		for _, m := range []int{1, 3, 4, 5, 9} {
			for _, n := range []int{1, 15, 16, 17, 63, 64, 65, 128, 130} {
				for _, k := range []int{1, 32, 33} {
					for _, pad := range []int{0, 3} {
						lda, ldb, ldc := k+pad, n+pad, n+pad
						a, b := randSlice(rng, (m-1)*lda+k), randSlice(rng, (k-1)*ldb+n)
						c := randSlice(rng, (m-1)*ldc+n) // stale values must be overwritten
						before := append([]float32(nil), c...)
						impl(a, b, c, m, n, k, lda, ldb, ldc)
						for i := 0; i < m; i++ {
							for j := 0; j < ldc && i*ldc+j < len(c); j++ {
								if j >= n {
									if c[i*ldc+j] != before[i*ldc+j] {
										t.Fatalf("%s %d×%d×%d pad %d: wrote C's padding at [%d,%d]", name, m, n, k, pad, i, j)
									}
									continue
								}
								var s, mag float64
								for p := 0; p < k; p++ {
									s += float64(a[i*lda+p]) * float64(b[p*ldb+j])
									mag += math.Abs(float64(a[i*lda+p]) * float64(b[p*ldb+j]))
								}
								if d := math.Abs(float64(c[i*ldc+j]) - s); !(d <= float64(k)*0x1p-23*mag+1e-30) {
									t.Fatalf("%s %d×%d×%d pad %d: C[%d,%d] = %g, want %g", name, m, n, k, pad, i, j, c[i*ldc+j], s)
								}
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

// TestSoftmaxSpecialValues: −Inf entries get probability 0 and the rest
// normalise as usual; a row holding a NaN becomes all NaN in every kernel.
func TestSoftmaxSpecialValues(t *testing.T) {
	inf := float32(math.Inf(-1))
	for name, impl := range softmaxImpls {
		for _, cols := range []int{5, 17} {
			row := make([]float32, cols)
			for j := range row {
				row[j] = float32(j)
			}
			row[1], row[cols-1] = inf, inf
			impl(row, 1, cols)
			var sum float64
			for j, p := range row {
				if (j == 1 || j == cols-1) && p != 0 {
					t.Fatalf("%s cols %d: p[%d] = %v for −Inf, want 0", name, cols, j, p)
				}
				sum += float64(p)
			}
			if math.Abs(sum-1) > 1e-6 {
				t.Fatalf("%s cols %d: probabilities sum to %v", name, cols, sum)
			}
			nan := make([]float32, cols)
			nan[cols/2] = float32(math.NaN())
			impl(nan, 1, cols)
			for j, p := range nan {
				if !math.IsNaN(float64(p)) {
					t.Fatalf("%s cols %d: p[%d] = %v in a row with a NaN, want NaN", name, cols, j, p)
				}
			}
		}
	}
}
