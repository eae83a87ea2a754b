package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLayerNormRowMatchesReference checks every LayerNorm row kernel
// against float64 on rows of 1 to 70 values and a BERT-sized row, some
// with a mean far from zero (where a one-pass variance would cancel), in
// place and not. Tolerance: 16·n·2⁻²³ relative to the output's scale.
func TestLayerNormRowMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	lengths := []int{384, 768}
	for n := 1; n <= 70; n++ {
		lengths = append(lengths, n)
	}
	for name, impl := range layerNormImpls {
		for _, n := range lengths {
			for _, offset := range []float32{0, 1000} {
				x, g, b := randSlice(rng, n), randSlice(rng, n), randSlice(rng, n)
				for i := range x {
					x[i] += offset
				}
				want := refLayerNormRow(x, g, b, 1e-5)
				out := make([]float32, n)
				impl(x, g, b, out, 1e-5)
				inPlace := append([]float32(nil), x...)
				impl(inPlace, g, b, inPlace, 1e-5)
				for j := range want {
					tol := 16 * float64(n) * 0x1p-23 * (math.Abs(float64(g[j]))*4 + math.Abs(float64(b[j])) + 1)
					if math.Abs(float64(out[j])-want[j]) > tol || out[j] != inPlace[j] {
						t.Fatalf("%s n=%d offset %g: out[%d] = %g (in place %g), want %g", name, n, offset, j, out[j], inPlace[j], want[j])
					}
				}
			}
		}
	}
}

func refLayerNormRow(x, g, b []float32, eps float64) []float64 {
	var mean, v float64
	for _, e := range x {
		mean += float64(e)
	}
	mean /= float64(len(x))
	for _, e := range x {
		v += (float64(e) - mean) * (float64(e) - mean)
	}
	inv := 1 / math.Sqrt(v/float64(len(x))+eps)
	out := make([]float64, len(x))
	for j, e := range x {
		out[j] = (float64(e)-mean)*inv*float64(g[j]) + float64(b[j])
	}
	return out
}

// TestLayerNormRowHugeSpread: deviations whose squares overflow float32
// still normalise (every kernel sums the squares in double).
func TestLayerNormRowHugeSpread(t *testing.T) {
	x := []float32{3e19, -3e19, 1e19, -1e19}
	g, b := []float32{1, 1, 1, 1}, []float32{0, 0, 0, 0}
	want := refLayerNormRow(x, g, b, 1e-5)
	for name, impl := range layerNormImpls {
		out := make([]float32, len(x))
		impl(x, g, b, out, 1e-5)
		for j := range want {
			if math.Abs(float64(out[j])-want[j]) > 1e-5 {
				t.Fatalf("%s: out[%d] = %v, want %v", name, j, out[j], want[j])
			}
		}
	}
}
