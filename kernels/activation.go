package kernels

import "math"

// Activate applies act elementwise: out[i] = act(x[i]) (out may alias x).
//
// Reference loops (float64):
//
//	gelu: 0.5·x·(1 + erf(x/√2))   tanh: tanh(x)   relu: max(x, 0)
//	sigmoid: 1/(1 + e^(−x))
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
		copy(out, x)
		geluBiasRow(out, nil)
	case ActTanh:
		for i, v := range x {
			out[i] = float32(math.Tanh(float64(v)))
		}
	case ActReLU:
		for i, v := range x {
			out[i] = max(v, 0)
		}
	case ActSigmoid:
		for i, v := range x {
			out[i] = float32(1 / (1 + math.Exp(-float64(v))))
		}
	default:
		copy(out, x)
	}
}

// geluBiasRow computes row[j] = gelu(row[j] + bias[j]) (bias may be nil);
// a SIMD version replaces it at start-up where the CPU allows.
var geluBiasRow = geluBiasRowGo

// geluImpls lists every GELU row kernel this CPU can run, by name, so
// tests compare each with the reference.
var geluImpls = map[string]func(row, bias []float32){"go": geluBiasRowGo}

func geluBiasRowGo(row, bias []float32) {
	for j, v := range row {
		x := float64(v)
		if bias != nil {
			x += float64(bias[j])
		}
		row[j] = gelu64(x)
	}
}

// gelu64 is the exact (erf) GELU of BERT and XLM-R, with erf by Abramowitz
// & Stegun 7.1.28: erf(z) = 1 − (1 + a1·z + … + a6·z⁶)⁻¹⁶ for z ≥ 0,
// absolute error below 3e-7, under float32's resolution of the output. It
// needs no exp, so it runs several times faster than math.Erf. The SIMD
// rows evaluate erfc by A&S 7.1.26 in float32 instead (gelu_avx2.go).
// GELU(−Inf) is −0, the limit, where the formula would give −Inf·0 = NaN.
func gelu64(x float64) float32 {
	if math.IsInf(x, -1) {
		return float32(math.Copysign(0, -1))
	}
	z := math.Abs(x) * (1 / math.Sqrt2)
	p := 1 + z*(0.0705230784+z*(0.0422820123+z*(0.0092705272+z*(0.0001520143+z*(0.0002765672+z*0.0000430638)))))
	p *= p
	p *= p
	p *= p
	p *= p
	e := 1 - 1/p
	if x < 0 {
		e = -e
	}
	return float32(0.5 * x * (1 + e))
}
