package kernels

import (
	"fmt"
	"math"

	"github.com/gleaner-rag/gleaner/engine"
)

// QuantRows is the engine's quantized matrix.
type QuantRows = engine.QuantRows

// Quantize returns the n×d row-major matrix X quantized as kind
// (engine.QuantBF16 or engine.QuantInt8). A non-finite value is an error:
// its quantized score would poison every query it meets.
func Quantize(X []float32, n, d int, kind string) (*QuantRows, error) {
	if n < 0 || d <= 0 || len(X) != n*d {
		return nil, fmt.Errorf("kernels: Quantize: %d values for %d×%d", len(X), n, d)
	}
	if i := firstNonFinite(X); i >= 0 {
		return nil, fmt.Errorf("kernels: Quantize: row %d value %d is %v", i/d, i%d, X[i])
	}
	m := &QuantRows{Kind: kind, N: n, D: d}
	switch kind {
	case engine.QuantBF16:
		m.BF16 = make([]uint16, len(X))
		parallelRows(n, d, func(lo, hi int) {
			for i, v := range X[lo*d : hi*d] {
				m.BF16[lo*d+i] = BF16(v)
			}
		})
	case engine.QuantInt8:
		m.I8, m.Scale = make([]int8, len(X)), make([]float32, n)
		parallelRows(n, d, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				m.Scale[r] = quantizeRowInt8(X[r*d:(r+1)*d], m.I8[r*d:(r+1)*d])
			}
		})
	default:
		return nil, fmt.Errorf("kernels: Quantize: kind %q, want one of %v", kind, engine.QuantKinds())
	}
	return m, nil
}

// firstNonFinite is the position of X's first NaN or infinity, or -1.
func firstNonFinite(X []float32) int {
	for i, v := range X {
		if math.Float32bits(v)&0x7f800000 == 0x7f800000 { // exponent all ones
			return i
		}
	}
	return -1
}

// BF16 rounds a finite float32 to bfloat16 (nearest, ties to even): the top
// 16 bits of the rounded value. Magnitudes that would round past the
// largest bfloat16 saturate to it rather than become infinite.
func BF16(v float32) uint16 {
	u := math.Float32bits(v)
	if u&0x7fffffff >= 0x7f7f8000 { // rounds up into the exponent of infinity
		return uint16(u>>16)&0x8000 | 0x7f7f
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// FromBF16 is the float32 a bfloat16 stands for.
func FromBF16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// quantizeRowInt8 writes row as steps of scale = max|row|/127 into codes
// (rounded to nearest, so every value is within scale/2) and returns the
// scale; a zero row has scale 0.
func quantizeRowInt8(row []float32, codes []int8) float32 {
	var top float32
	for _, v := range row {
		top = max(top, v, -v)
	}
	if top == 0 {
		clear(codes)
		return 0
	}
	scale := top / 127
	inv := 127 / float64(top) // in float64: 127/top overflows float32 for rows below 3.7e-37
	for j, v := range row {
		codes[j] = int8(max(-127, min(127, math.Round(float64(v)*inv))))
	}
	return scale
}
