package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemmPackedMatchesReference checks every packed-GEMM kernel against a
// float64 product, B packed from both layouts, on shapes that hit full and
// partial tiles (rows past multiples of 8 and of 6, columns past 16 and 32, k past a
// block of 256), strided A and C (whose padding must stay untouched), and
// both C = A·B and C += A·B. Tolerance: (k+1)·2⁻²³·(Σ|a·b| + |C₀|).
func TestGemmPackedMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for name, impl := range gemmPackedImpls {
		for _, s := range [][3]int{{1, 1, 1}, {8, 32, 16}, {9, 33, 7}, {4, 16, 5}, {10, 17, 257}, {17, 64, 300}, {3, 95, 513}, {260, 40, 20}} {
			m, n, k := s[0], s[1], s[2]
			for _, transB := range []bool{false, true} {
				ldb := n + 2
				if transB {
					ldb = k + 2
				}
				rows := k
				if transB {
					rows = n
				}
				b := randSlice(rng, rows*ldb)
				pb, err := PackB(b, transB, k, n, ldb)
				if err != nil {
					t.Fatal(err)
				}
				for _, accumulate := range []bool{false, true} {
					lda, ldc := k+1, n+3
					a, c := randSlice(rng, m*lda), randSlice(rng, m*ldc)
					c0 := append([]float32(nil), c...)
					panels := (n + packedPanel - 1) / packedPanel
					impl(a, lda, m, k, pb.data, 0, panels, n, c, ldc, accumulate)
					for i := 0; i < m; i++ {
						for j := 0; j < ldc; j++ {
							got := c[i*ldc+j]
							if j >= n {
								if got != c0[i*ldc+j] {
									t.Fatalf("%s: wrote C's padding at [%d,%d]", name, i, j)
								}
								continue
							}
							var want, mag float64
							if accumulate {
								want, mag = float64(c0[i*ldc+j]), math.Abs(float64(c0[i*ldc+j]))
							}
							for p := 0; p < k; p++ {
								var bv float32
								if transB {
									bv = b[j*ldb+p]
								} else {
									bv = b[p*ldb+j]
								}
								want += float64(a[i*lda+p]) * float64(bv)
								mag += math.Abs(float64(a[i*lda+p]) * float64(bv))
							}
							if d := math.Abs(float64(got) - want); !(d <= float64(k+1)*0x1p-23*mag) {
								t.Fatalf("%s %d×%d×%d transB=%v acc=%v: C[%d,%d] = %g, want %g", name, m, n, k, transB, accumulate, i, j, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// TestGemmPackedRowsIndependentOfBatch: a row's result is bit-identical
// whether it is multiplied alone or among 300 rows, split over workers.
func TestGemmPackedRowsIndependentOfBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	m, n, k := 300, 200, 700
	a, b := randSlice(rng, m*k), randSlice(rng, n*k)
	pb, err := PackB(b, true, k, n, k)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]float32, m*n)
	if err := GemmPacked(a, k, m, pb, all, n, false); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 7, 8, 299} {
		one := make([]float32, n)
		if err := GemmPacked(a[i*k:(i+1)*k], k, 1, pb, one, n, false); err != nil {
			t.Fatal(err)
		}
		for j := range one {
			if one[j] != all[i*n+j] {
				t.Fatalf("row %d col %d: %v alone, %v in the batch", i, j, one[j], all[i*n+j])
			}
		}
	}
}

// TestPackBRejectsShortInput: a B too short for its shape is an error.
func TestPackBRejectsShortInput(t *testing.T) {
	if _, err := PackB(make([]float32, 10), false, 4, 3, 3); err == nil {
		t.Fatal("packed a 4×3 B from 10 values")
	}
	if _, err := PackB(make([]float32, 12), true, 4, 3, 3); err == nil {
		t.Fatal("accepted ldb 3 < k 4 for a transposed B")
	}
}
