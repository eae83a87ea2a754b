package kernels

import "math"

// RMSNorm normalises each of rows rows of x (cols values) by its root mean
// square and scales by gamma: out = x/√(mean(x²) + eps)·gamma, as Llama's
// LlamaRMSNorm (no mean subtraction, no bias). out may alias x.
//
// Reference loop: the mean of squares in float64 over the row, then the
// scale.
func RMSNorm(x, gamma, out []float32, rows, cols int, eps float32) {
	parallelRows(rows, cols, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			rmsNormRow(x[i*cols:(i+1)*cols], gamma, out[i*cols:(i+1)*cols], eps)
		}
	})
}

func rmsNormRow(x, gamma, out []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+float64(eps))
	for j, v := range x {
		out[j] = float32(float64(v)*inv) * gamma[j]
	}
}
