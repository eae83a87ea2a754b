package kernels

import "math"

// SwiGLU is Llama's gated feed-forward activation: each of rows rows of x
// holds [gate | up] (2·cols values, one GEMM with the two projections side
// by side) and out (rows×cols) = silu(gate)·up, silu(g) = g/(1 + e^(−g)).
//
// Reference loop: the sigmoid and the product in float64.
func SwiGLU(x, out []float32, rows, cols int) {
	parallelRows(rows, 2*cols, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			gate, up, o := x[r*2*cols:r*2*cols+cols], x[r*2*cols+cols:(r+1)*2*cols], out[r*cols:(r+1)*cols]
			for j := range o {
				g := float64(gate[j])
				o[j] = float32(g / (1 + math.Exp(-g)) * float64(up[j]))
			}
		}
	})
}
