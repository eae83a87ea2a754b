package kernels

import "math"

// Softmax normalises each row of x (rows×cols) into out. When mask is not
// nil (rows×cols), entries with mask 0 are excluded and get probability 0;
// a row with every entry masked becomes all zeros rather than NaN. out may
// alias x.
//
// Reference loop: m = max over unmasked; e_j = exp(x_j − m); out_j = e_j/Σe.
func Softmax(x, mask, out []float32, rows, cols int) {
	parallelRows(rows, cols, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			var mrow []float32
			if mask != nil {
				mrow = mask[i*cols : (i+1)*cols]
			}
			softmaxRow(x[i*cols:(i+1)*cols], mrow, out[i*cols:(i+1)*cols])
		}
	})
}

func softmaxRow(x, mask, out []float32) {
	m := float32(math.Inf(-1))
	for j, v := range x {
		if (mask == nil || mask[j] != 0) && v > m {
			m = v
		}
	}
	if math.IsInf(float64(m), -1) {
		clear(out)
		return
	}
	var sum float64
	for j, v := range x {
		if (mask != nil && mask[j] == 0) || v < -math.MaxFloat32 { // masked, or a −Inf score (a causal future)
			out[j] = 0
			continue
		}
		e := float32(math.Exp(float64(v - m)))
		out[j] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for j := range out {
		out[j] *= inv
	}
}
