package kernels

import "math"

// LayerNorm normalises each of rows rows of x (cols values) and applies the
// affine map: out = (x − mean)/√(var + eps)·gamma + beta, with the biased
// variance (as PyTorch and the BERT family). out may alias x.
//
// Reference loop: mean and variance in float64 over the row, then the map.
func LayerNorm(x, gamma, beta, out []float32, rows, cols int, eps float32) {
	parallelRows(rows, cols, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			layerNormRow(x[i*cols:(i+1)*cols], gamma, beta, out[i*cols:(i+1)*cols], eps)
		}
	})
}

// layerNormRow normalises one row; a SIMD version replaces it at start-up
// where the CPU allows (layerNormImpls lists each, for the tests).
var layerNormRow = layerNormRowGo

var layerNormImpls = map[string]func(x, gamma, beta, out []float32, eps float32){"go": layerNormRowGo}

func layerNormRowGo(x, gamma, beta, out []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	mean := sum / float64(len(x))
	var ss float64
	for _, v := range x {
		d := float64(v) - mean
		ss += d * d
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+float64(eps))
	for j, v := range x {
		out[j] = float32((float64(v)-mean)*inv)*gamma[j] + beta[j]
	}
}
