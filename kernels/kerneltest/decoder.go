package kerneltest

import (
	"math"

	"github.com/gleaner-rag/gleaner/engine"
)

func refRMSNorm(x, g []float32, rows, cols int, eps float64) []float64 {
	out := make([]float64, rows*cols)
	for r := 0; r < rows; r++ {
		ss := 0.0
		for j := 0; j < cols; j++ {
			ss += float64(x[r*cols+j]) * float64(x[r*cols+j])
		}
		inv := 1 / math.Sqrt(ss/float64(cols)+eps)
		for j := 0; j < cols; j++ {
			out[r*cols+j] = float64(x[r*cols+j]) * inv * float64(g[j])
		}
	}
	return out
}

func testRMSNorm(h *H) {
	for _, c := range [][2]int{{1, 1}, {3, 17}, {129, 64}} {
		rows, cols := c[0], c[1]
		x, g := h.Rand(rows*cols), h.Rand(cols)
		out := h.Poisoned(rows * cols)
		h.Must(h.B.RMSNorm(engine.RMSNormOp{X: h.Up(x), Gamma: h.Up(g), Out: out, Rows: rows, Cols: cols, Eps: 1e-5}))
		h.Close(name("rmsnorm ", c), h.Down(out), refRMSNorm(x, g, rows, cols, 1e-5), Tol(cols, 4))
		xb := h.Up(x) // in place
		h.Must(h.B.RMSNorm(engine.RMSNormOp{X: xb, Gamma: h.Up(g), Out: xb, Rows: rows, Cols: cols, Eps: 1e-5}))
		h.Close(name("rmsnorm in place ", c), h.Down(xb), refRMSNorm(x, g, rows, cols, 1e-5), Tol(cols, 4))
	}
}

// refRoPE rotates the pairs (i, i+d/2) of every head by (pos0+r)·θ^(−2i/d).
func refRoPE(x []float32, rows, heads, d, ld, off, pos0 int, inv []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	half := d / 2
	for r := 0; r < rows; r++ {
		for hd := 0; hd < heads; hd++ {
			base := off + r*ld + hd*d
			for i := 0; i < half; i++ {
				s, c := math.Sincos(float64(pos0+r) * float64(inv[i]))
				x1, x2 := float64(x[base+i]), float64(x[base+i+half])
				out[base+i], out[base+i+half] = x1*c-x2*s, x2*c+x1*s
			}
		}
	}
	return out
}

func testRoPE(h *H) {
	for _, c := range [][5]int{{1, 1, 2, 0, 0}, {5, 3, 8, 0, 7}, {17, 4, 16, 80, 1000}} {
		rows, heads, d, ld, pos0 := c[0], c[1], c[2], c[3], c[4]
		stride := ld
		if stride == 0 {
			stride = heads * d
		}
		off := 3
		x := h.Rand(off + rows*stride)
		inv := make([]float32, d/2)
		for i := range inv {
			inv[i] = float32(math.Pow(10000, -2*float64(i)/float64(d)))
		}
		buf := h.Up(x)
		h.Must(h.B.RoPE(engine.RoPEOp{X: buf, Off: off, Rows: rows, Heads: heads, HeadDim: d, LD: ld, Pos0: pos0, InvFreq: inv}))
		// the angle is rounded to float32 once per (row, frequency): allow
		// its error, pos·θ·eps, on values of size |x|
		h.Close(name("rope ", c), h.Down(buf), refRoPE(x, rows, heads, d, stride, off, pos0, inv), Tol(4, 1)+float64(pos0+rows)*eps32*4)
	}
}

func testSwiGLU(h *H) {
	for _, c := range [][2]int{{1, 1}, {7, 33}, {64, 129}} {
		rows, cols := c[0], c[1]
		x := h.Rand(rows * 2 * cols)
		x[0] = -100 // e^100 must not overflow into NaN
		out := h.Poisoned(rows * cols)
		h.Must(h.B.SwiGLU(engine.SwiGLUOp{X: h.Up(x), Out: out, Rows: rows, Cols: cols}))
		want := make([]float64, rows*cols)
		for r := 0; r < rows; r++ {
			for j := 0; j < cols; j++ {
				g, u := float64(x[r*2*cols+j]), float64(x[r*2*cols+cols+j])
				want[r*cols+j] = g / (1 + math.Exp(-g)) * u
			}
		}
		h.Close(name("swiglu ", c), h.Down(out), want, Tol(4, 4))
	}
}
