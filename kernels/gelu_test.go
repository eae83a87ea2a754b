package kernels

import (
	"math"
	"testing"
)

// TestGELUMatchesErf checks every GELU kernel against 0.5·x·(1+erf(x/√2))
// in float64 on a dense grid over [-12, 12], both signs of tiny inputs,
// huge ones, and a row length that leaves a tail: the error stays under
// 3e-7·(1+|x|) (the erf approximation's 1.5e-7 plus float32 rounding).
// Infinities and NaN follow the formula: GELU(+Inf) = +Inf, NaN stays NaN.
func TestGELUMatchesErf(t *testing.T) {
	var xs []float32
	for x := -12.0; x <= 12; x += 1.0 / 512 {
		xs = append(xs, float32(x))
	}
	xs = append(xs, 1e-30, -1e-30, 1e-7, -1e-7, 0, 40, -40, 1e30, -1e30, 3.3e38, -3.3e38)
	bias := make([]float32, len(xs))
	for i := range bias {
		bias[i] = float32(i%3) * 0.25
	}
	for name, impl := range geluImpls {
		for _, withBias := range []bool{false, true} {
			row := append([]float32(nil), xs...)
			var b []float32
			if withBias {
				b = bias
			}
			impl(row, b)
			for i, got := range row {
				x := float64(xs[i])
				if withBias {
					x = float64(xs[i] + bias[i]) // the kernels add in float32 or exactly; both round the same here
				}
				want := 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
				if math.Abs(float64(got)-want) > 3e-7*(1+math.Abs(x)) || math.IsNaN(float64(got)) {
					t.Fatalf("%s bias=%v: gelu(%g) = %g, want %g", name, withBias, x, got, want)
				}
			}
		}
		special := []float32{float32(math.Inf(1)), float32(math.NaN()), float32(math.Inf(-1)), -3e38}
		impl(special, nil)
		if !math.IsInf(float64(special[0]), 1) || !math.IsNaN(float64(special[1])) || special[2] != 0 || special[3] != 0 {
			t.Errorf("%s: gelu(+Inf), gelu(NaN), gelu(−Inf), gelu(−3e38) = %v, want +Inf, NaN, 0, 0", name, special)
		}
	}
}
