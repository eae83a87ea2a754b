package kerneltest

import (
	"math"

	"github.com/gleaner-rag/gleaner/engine"
)

// testBiasAct checks the bias + activation epilogue on its own: a matrix
// with a leading dimension wider than its columns and an element offset
// (the padding must stay untouched), with and without a bias, for every
// activation.
func testBiasAct(h *H) {
	for _, rows := range Sizes {
		for _, cols := range []int{1, 3, 17} {
			ld, off := cols+2, 5
			for _, act := range allActs {
				for _, withBias := range []bool{false, true} {
					x := h.Rand(off + rows*ld)
					var bias []float32
					var bb engine.Buffer
					if withBias {
						bias = h.Rand(cols)
						bb = h.Up(bias)
					}
					xb := h.Up(x)
					h.Must(h.B.BiasAct(engine.BiasActOp{X: xb, Off: off, Rows: rows, Cols: cols, LD: ld, Bias: bb, Act: act}))
					want := make([]float64, len(x))
					for i, v := range x {
						want[i] = float64(v)
					}
					for r := 0; r < rows; r++ {
						for c := 0; c < cols; c++ {
							v := float64(x[off+r*ld+c])
							if withBias {
								v += float64(bias[c])
							}
							want[off+r*ld+c] = refAct(act, v)
						}
					}
					h.Close(name("bias_act ", rows, "×", cols, " ", act, " bias=", withBias), h.Down(xb), want, Tol(2, 4)+1e-6*math.Sqrt(float64(cols)))
				}
			}
		}
	}
}
