package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
)

// TestCodeRowsEqualsScan checks every implementation against the float64
// reference and, bit for bit, against its own quantized scan at batch 1;
// and ScoreCodeRows against ScoreCodes.
func TestCodeRowsEqualsScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 1))
	for _, d := range []int{1, 7, 8, 16, 33, 64, 65, 256} {
		n := 50
		m, err := Quantize(randMat(rng, n*d), n, d, engine.QuantInt8)
		if err != nil {
			t.Fatal(err)
		}
		q := randMat(rng, d)
		ids := []int32{49, 0, 3, 3, 17, 48, 1, 25, 9, 10, 11, 12, 13, 14, 15}
		for name, rows := range codeRowsImpls {
			scan := make([]float32, n)
			dotQImpls[name].i8(m.I8, n, d, q, 1, scan)
			out := make([]float32, len(ids))
			rows(m.I8, d, ids, q, out)
			for i, r := range ids {
				var ref, mag float64
				for j := 0; j < d; j++ {
					p := float64(m.I8[int(r)*d+j]) * float64(q[j])
					ref, mag = ref+p, mag+math.Abs(p)
				}
				if out[i] != scan[r] {
					t.Fatalf("%s d=%d: row %d scores %v gathered, %v scanned", name, d, r, out[i], scan[r])
				}
				// d float32 sums: error ≤ d·2⁻²⁴·Σ|c·q|.
				if tol := float64(d) * math.Pow(2, -24) * mag; math.Abs(float64(out[i])-ref) > tol {
					t.Fatalf("%s d=%d: row %d = %v, reference %v", name, d, r, out[i], ref)
				}
			}
		}
		scan, out := make([]float32, n), make([]float32, len(ids))
		ScoreCodes(m.I8, m.Scale, d, q, scan)
		ScoreCodeRows(m.I8, m.Scale, d, ids, q, out)
		for i, r := range ids {
			if out[i] != scan[r] {
				t.Fatalf("d=%d: ScoreCodeRows row %d = %v, ScoreCodes %v", d, r, out[i], scan[r])
			}
		}
	}
}

func TestScoreCodeRowsRejectsBadShapes(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a code matrix of the wrong size was accepted")
		}
	}()
	ScoreCodeRows(make([]int8, 7), make([]float32, 2), 4, []int32{0}, make([]float32, 4), make([]float32, 1))
}
