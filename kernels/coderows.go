package kernels

import "fmt"

// codeRows is the gather form of dotBlockI8 at batch 1: the float32 query
// q against the int8 rows of codes (width d) named by ids, out[i] =
// codes row ids[i] · q, before the row's scale. Graph builds search on
// codes this way (a quarter of float32's bytes per row visited); every
// implementation sums in its dotBlockI8 twin's order, so a gathered row
// scores as the quantized scan scores it, bit for bit.
//
// Reference loop (float64 accumulation in the reference of the tests):
//
//	for i, r := range ids {
//		var s float32
//		for j := 0; j < d; j++ { s += float32(codes[int(r)*d+j]) * q[j] }
//		out[i] = s
//	}
//
// It is a variable so the SIMD paths can replace it at start-up, together
// with dotBlockI8.
var codeRows = codeRowsGo

// codeRowsImpls lists every implementation by dotQImpls' names.
var codeRowsImpls = map[string]func(codes []int8, d int, ids []int32, q, out []float32){"go": codeRowsGo}

func codeRowsGo(codes []int8, d int, ids []int32, q, out []float32) {
	for i, r := range ids {
		dotBlockI8Go(codes[int(r)*d:int(r)*d+d], 1, d, q, 1, out[i:i+1])
	}
}

// ScoreCodeRows scores the int8 rows of codes (width d, one scale per
// row) named by ids against q into out[:len(ids)]: out[i] = scale[ids[i]]
// · (codes row ids[i] · q), each exactly as ScoreCodes scores that row. Row
// ids must lie in [0, len(scale)): a caller checks its graph once rather
// than on every call, so ScoreCodeRows checks only the shapes, and an id
// out of range panics in the pure-Go twin and is undefined in the SIMD
// paths.
func ScoreCodeRows(codes []int8, scale []float32, d int, ids []int32, q, out []float32) {
	if d <= 0 || len(q) != d || len(codes) != len(scale)*d || len(out) < len(ids) {
		panic(fmt.Sprintf("kernels: ScoreCodeRows: d %d, query %d, %d codes for %d rows, out %d for %d ids", d, len(q), len(codes), len(scale), len(out), len(ids)))
	}
	codeRows(codes, d, ids, q, out)
	for i, r := range ids {
		out[i] *= scale[r]
	}
}
