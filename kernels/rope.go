package kernels

import (
	"fmt"
	"math"
)

// RoPEArgs describes rotary position embeddings applied in place to Rows
// rows of X, each holding Heads heads of HeadDim values (row stride LD; 0 =
// Heads·HeadDim). Row r is at position Pos0 + r. InvFreq holds the
// HeadDim/2 inverse frequencies (θ^(−2i/HeadDim), possibly rescaled as
// Llama 3's rope_scaling does).
type RoPEArgs struct {
	X                    []float32
	Rows, Heads, HeadDim int
	LD, Pos0             int
	InvFreq              []float32
}

// RoPE rotates each head's pairs (i, i + HeadDim/2) by the angle
// (Pos0 + r)·InvFreq[i]: x_i ← x_i·cos − x_{i+h}·sin, x_{i+h} ← x_{i+h}·cos
// + x_i·sin — HuggingFace's rotate_half layout, not interleaved pairs.
//
// Reference loop: the angle and its sine and cosine in float64 per row and
// frequency, the rotation in float64.
func RoPE(a RoPEArgs) error {
	half := a.HeadDim / 2
	ld := a.LD
	if ld == 0 {
		ld = a.Heads * a.HeadDim
	}
	switch {
	case a.Rows < 0 || a.Heads <= 0 || a.HeadDim <= 0 || a.HeadDim%2 != 0 || a.Pos0 < 0 || ld < a.Heads*a.HeadDim:
		return fmt.Errorf("kernels: rope: bad shape rows=%d heads=%d head_dim=%d ld=%d pos0=%d (head_dim must be even)", a.Rows, a.Heads, a.HeadDim, ld, a.Pos0)
	case len(a.InvFreq) < half || len(a.X) < strided(a.Rows, a.Heads*a.HeadDim, ld):
		return fmt.Errorf("kernels: rope: buffers too short")
	}
	parallelRows(a.Rows, a.Heads*a.HeadDim, func(lo, hi int) {
		cos, sin := make([]float64, half), make([]float64, half)
		for r := lo; r < hi; r++ {
			pos := float64(a.Pos0 + r)
			for i := 0; i < half; i++ {
				sin[i], cos[i] = math.Sincos(pos * float64(a.InvFreq[i]))
			}
			row := a.X[r*ld : r*ld+a.Heads*a.HeadDim]
			for h := 0; h < a.Heads; h++ {
				x := row[h*a.HeadDim : (h+1)*a.HeadDim]
				for i := 0; i < half; i++ {
					x1, x2 := float64(x[i]), float64(x[i+half])
					x[i] = float32(x1*cos[i] - x2*sin[i])
					x[i+half] = float32(x2*cos[i] + x1*sin[i])
				}
			}
		}
	})
	return nil
}
