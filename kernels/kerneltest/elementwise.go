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
	for _, act := range allActs {
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

func testMul(h *H) {
	for _, n := range append(Sizes, 5000) {
		x, y, acc := h.Rand(n), h.Rand(n), h.Rand(n)
		for _, add := range []bool{false, true} {
			out := h.Poisoned(n)
			if add {
				out = h.Up(acc)
			}
			h.Must(h.B.Mul(engine.MulOp{N: n, X: h.Up(x), Y: h.Up(y), Out: out, Accumulate: add}))
			want, tol := make([]float64, n), make([]float64, n)
			for i := range want {
				p := float64(x[i]) * float64(y[i])
				if add {
					want[i], tol[i] = float64(acc[i])+p, Tol(2, math.Abs(p)+math.Abs(float64(acc[i])))
				} else {
					want[i], tol[i] = p, Tol(1, math.Abs(p))
				}
			}
			h.Close(name("mul n=", n, " accumulate=", add), h.Down(out), want, tol...)
		}
	}
}

func testCopyRows(h *H) {
	for _, n := range Sizes {
		for _, cols := range []int{1, 7, 64} {
			xRows, outRows := n+3, 2*n+1
			x, base := h.Rand(xRows*cols), h.Rand(outRows*cols)
			src := make([]int32, n)
			for i := range src {
				src[i] = int32(h.rng.IntN(xRows+1) - 1) // −1: a zero row
			}
			dst := h.rng.Perm(outRows)[:n]
			for _, c := range []struct {
				name     string
				src, dst bool
				add      bool
			}{{"gather", true, false, false}, {"scatter", false, true, false}, {"both", true, true, false}, {"both add", true, true, true}, {"gather add", true, false, true}} {
				op := engine.CopyRowsOp{N: n, Cols: cols, X: h.Up(x), Out: h.Up(base), Add: c.add}
				want := make([]float64, len(base))
				for i, v := range base {
					want[i] = float64(v)
				}
				var d32 []int32
				for i := 0; i < n; i++ {
					s, d := i, i
					if c.src {
						s = int(src[i])
					}
					if c.dst {
						d = dst[i]
					}
					d32 = append(d32, int32(d))
					for j := 0; j < cols; j++ {
						switch {
						case s < 0 && c.add:
						case s < 0:
							want[d*cols+j] = 0
						case c.add:
							want[d*cols+j] += float64(x[s*cols+j])
						default:
							want[d*cols+j] = float64(x[s*cols+j])
						}
					}
				}
				if c.src {
					op.Src = h.UpI32(src)
				}
				if c.dst {
					op.Dst = h.UpI32(d32)
				}
				h.Must(h.B.CopyRows(op))
				h.Close(name("copy rows ", c.name, " n=", n, " cols=", cols), h.Down(op.Out), want, Tol(2, 8))
			}
		}
	}
}
