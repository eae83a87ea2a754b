package kernels

import "math"

// Activate applies act elementwise: out[i] = act(x[i]) (out may alias x).
//
// Reference loops (float64):
//
//	gelu: 0.5·x·(1 + erf(x/√2))   tanh: tanh(x)   relu: max(x, 0)
func Activate(act Activation, x, out []float32) {
	parallelRows(len(x)/4096+1, 4096, func(lo, hi int) {
		a, b := min(lo*4096, len(x)), min(hi*4096, len(x))
		activateSlice(act, x[a:b], out[a:b])
	})
}

func activateSlice(act Activation, x, out []float32) {
	out = out[:len(x)]
	switch act {
	case ActGELU:
		for i, v := range x {
			out[i] = gelu(v)
		}
	case ActTanh:
		for i, v := range x {
			out[i] = float32(math.Tanh(float64(v)))
		}
	case ActReLU:
		for i, v := range x {
			out[i] = max(v, 0)
		}
	default:
		copy(out, x)
	}
}

// gelu is the exact (erf) GELU of BERT and XLM-R.
func gelu(x float32) float32 {
	return 0.5 * x * (1 + erf32(x*math.Sqrt2/2))
}

// erf32 is erf with fractional error below 1.2e-7 everywhere (Numerical
// Recipes' Chebyshev fit of erfc), about 3× faster than math.Erf.
func erf32(x float32) float32 {
	z := math.Abs(float64(x))
	t := 1 / (1 + 0.5*z)
	r := t * math.Exp(-z*z-1.26551223+t*(1.00002368+t*(0.37409196+t*(0.09678418+
		t*(-0.18628806+t*(0.27886807+t*(-1.13520398+t*(1.48851587+
			t*(-0.82215223+t*0.17087277)))))))))
	if x >= 0 {
		return float32(1 - r)
	}
	return float32(r - 1)
}
