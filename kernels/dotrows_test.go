package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotRowsEqualsScan checks every implementation against the float64
// reference and, bit for bit, against its own scan at batch 1.
func TestDotRowsEqualsScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 0))
	for _, d := range []int{1, 7, 8, 16, 33, 384} {
		n := 50
		X := randMat(rng, n*d)
		q := randMat(rng, d)
		ids := []int32{49, 0, 3, 3, 17, 48, 1, 25, 9, 10, 11}
		for name, rows := range dotRowsImpls {
			scan := make([]float32, n)
			dotImpls[name](X, n, d, q, 1, scan)
			out := make([]float32, len(ids))
			rows(X, d, ids, q, out)
			for i, r := range ids {
				var ref float64
				for j := 0; j < d; j++ {
					ref += float64(X[int(r)*d+j]) * float64(q[j])
				}
				if out[i] != scan[r] {
					t.Fatalf("%s d=%d: row %d scores %v gathered, %v scanned", name, d, r, out[i], scan[r])
				}
				// float32 sums of d products: error ≤ d·2⁻²³·Σ|x·q|, bounded here by d·2⁻²³·d·max².
				if tol := float64(d) * float64(d) * 16 * math.Pow(2, -23); math.Abs(float64(out[i])-ref) > tol {
					t.Fatalf("%s d=%d: row %d = %v, reference %v", name, d, r, out[i], ref)
				}
			}
		}
	}
}

func TestDotRowsRejectsBadShapes(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a query of the wrong width was accepted")
		}
	}()
	DotRows(make([]float32, 8), 4, []int32{0}, make([]float32, 3), make([]float32, 1))
}
