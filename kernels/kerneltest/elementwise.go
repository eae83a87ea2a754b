package kerneltest

import (
	"math"

	"github.com/gleaner-rag/gleaner/engine"
)

func refLayerNorm(x, g, b []float32, rows, cols int, eps float64) []float64 {
	out := make([]float64, rows*cols)
	for i := 0; i < rows; i++ {
		var mean, v float64
		for j := 0; j < cols; j++ {
			mean += float64(x[i*cols+j])
		}
		mean /= float64(cols)
		for j := 0; j < cols; j++ {
			d := float64(x[i*cols+j]) - mean
			v += d * d
		}
		inv := 1 / math.Sqrt(v/float64(cols)+eps)
		for j := 0; j < cols; j++ {
			out[i*cols+j] = (float64(x[i*cols+j])-mean)*inv*float64(g[j]) + float64(b[j])
		}
	}
	return out
}

func testLayerNorm(h *H) {
	for _, rows := range Sizes {
		for _, cols := range Sizes {
			x, g, b := h.Rand(rows*cols), h.Rand(cols), h.Rand(cols)
			out := h.Poisoned(rows * cols)
			h.Must(h.B.LayerNorm(engine.LayerNormOp{X: h.Up(x), Gamma: h.Up(g), Beta: h.Up(b), Out: out, Rows: rows, Cols: cols, Eps: 1e-5}))
			h.Close(name("layernorm ", rows, "×", cols), h.Down(out), refLayerNorm(x, g, b, rows, cols, 1e-5), Tol(cols, 8))
		}
	}
}

func testActivate(h *H) {
	x := h.Rand(1031)
	x = append(x, 0, -8, 8, 1e-8, -30, 30)
	for _, act := range []engine.Activation{engine.ActNone, engine.ActGELU, engine.ActTanh, engine.ActReLU} {
		out := h.Poisoned(len(x))
		h.Must(h.B.Activate(engine.ActivateOp{Act: act, X: h.Up(x), Out: out, N: len(x)}))
		want, tol := make([]float64, len(x)), make([]float64, len(x))
		for i, v := range x {
			want[i] = refAct(act, float64(v))
			tol[i] = 8 * eps32 * (math.Abs(want[i]) + math.Abs(float64(v)) + 1e-3)
		}
		h.Close(name("activate ", act), h.Down(out), want, tol...)
	}
}

func refSoftmax(x, mask []float32, rows, cols int) []float64 {
	out := make([]float64, rows*cols)
	for i := 0; i < rows; i++ {
		m := math.Inf(-1)
		for j := 0; j < cols; j++ {
			if mask == nil || mask[i*cols+j] != 0 {
				m = math.Max(m, float64(x[i*cols+j]))
			}
		}
		if math.IsInf(m, -1) {
			continue
		}
		var s float64
		for j := 0; j < cols; j++ {
			if mask == nil || mask[i*cols+j] != 0 {
				out[i*cols+j] = math.Exp(float64(x[i*cols+j]) - m)
				s += out[i*cols+j]
			}
		}
		for j := 0; j < cols; j++ {
			out[i*cols+j] /= s
		}
	}
	return out
}

func testSoftmax(h *H) {
	for _, rows := range Sizes {
		for _, cols := range Sizes {
			x := h.Rand(rows * cols)
			for _, masked := range []bool{false, true} {
				var mask []float32
				var mb engine.Buffer
				if masked {
					mask = make([]float32, rows*cols)
					for i := range mask {
						if h.rng.IntN(3) > 0 {
							mask[i] = 1
						}
					}
					for j := 0; j < cols; j++ {
						mask[j] = 0 // row 0 fully masked: zeros, never NaN
					}
					mb = h.Up(mask)
				}
				out := h.Poisoned(rows * cols)
				h.Must(h.B.Softmax(engine.SoftmaxOp{X: h.Up(x), Mask: mb, Out: out, Rows: rows, Cols: cols}))
				h.Close(name("softmax ", rows, "×", cols, " masked=", masked), h.Down(out), refSoftmax(x, mask, rows, cols), Tol(cols, 4))
			}
		}
	}
}

func testAxpby(h *H) {
	n := 1029
	x, y := h.Rand(n), h.Rand(n)
	out := h.Poisoned(n)
	h.Must(h.B.Axpby(engine.AxpbyOp{N: n, Alpha: 0.8, X: h.Up(x), Beta: -0.2, Y: h.Up(y), Out: out}))
	want := make([]float64, n)
	for i := range want {
		want[i] = 0.8*float64(x[i]) - 0.2*float64(y[i])
	}
	h.Close("axpby", h.Down(out), want, Tol(2, 10))
}
