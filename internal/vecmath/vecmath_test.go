package vecmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotRowsEqualsDot: every row's score is Dot's bit for bit, whatever
// the number of rows (whole groups of four and the rest), the width, and
// the values' magnitudes (which make the order of the sums matter).
func TestDotRowsEqualsDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 7))
	for _, d := range []int{0, 1, 3, 16, 255, 256} {
		const n = 40
		X := make([]float32, n*d)
		for i := range X {
			X[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(9)-4)))
		}
		q := X[:d]
		for count := range 11 {
			ids := make([]int32, count)
			for i := range ids {
				ids[i] = rng.Int32N(n)
			}
			out := make([]float64, count)
			DotRows(X, ids, q, out)
			for i, r := range ids {
				if want := float64(Dot(X[int(r)*d:int(r+1)*d], q)); math.Float64bits(out[i]) != math.Float64bits(want) {
					t.Fatalf("d %d, %d rows: row %d scores %v, Dot %v", d, count, r, out[i], want)
				}
			}
		}
	}
}

// BenchmarkDotRows scores 10⁴ random rows of a 256 MiB matrix (256 values
// a row, as a hub's neighbours at 10⁶ passages), by DotRows and by Dot one
// row at a time.
func BenchmarkDotRows(b *testing.B) {
	const n, d = 1 << 18, 256
	X := make([]float32, n*d)
	for i := range X {
		X[i] = float32(i%97) * 0.01
	}
	rng := rand.New(rand.NewPCG(1, 1))
	ids := make([]int32, 10000)
	for i := range ids {
		ids[i] = rng.Int32N(n)
	}
	out := make([]float64, len(ids))
	q := X[:d]
	b.Run("four at a time", func(b *testing.B) {
		for range b.N {
			DotRows(X, ids, q, out)
		}
	})
	b.Run("one at a time", func(b *testing.B) {
		for range b.N {
			for i, r := range ids {
				out[i] = float64(Dot(X[int(r)*d:int(r+1)*d], q))
			}
		}
	})
}

// TestDotCodes: the int8 inner product is within float32 summation error
// of a float64 reference, at widths around its four accumulators.
func TestDotCodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, d := range []int{0, 1, 3, 4, 5, 8, 255, 256} {
		codes, q := make([]int8, d), make([]float32, d)
		var ref, mag float64
		for j := range d {
			codes[j], q[j] = int8(rng.IntN(255)-127), float32(rng.NormFloat64())
			p := float64(codes[j]) * float64(q[j])
			ref, mag = ref+p, mag+math.Abs(p)
		}
		got := DotCodes(codes, q)
		if tol := float64(d) * math.Pow(2, -24) * mag; math.Abs(float64(got)-ref) > tol {
			t.Fatalf("d=%d: %v, reference %v", d, got, ref)
		}
	}
}
