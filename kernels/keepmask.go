package kernels

// keepMask marks the scores of a scored block that may enter their query's
// top k: bit r of mask[q*words+r/64] (words = (rows+63)/64) is set when
// !(scores[q*rows+r] <= thr[q]). A NaN threshold (the query's heap is not
// yet full) keeps every score, and a NaN score is kept for the heap to
// refuse, as pushBlock does. The scan's thresholds only rise, so a block
// filtered on thresholds read before it keeps a superset of what pushBlock
// would push, and the heaps end the same.
//
// Reference loop:
//
//	for q := 0; q < nq; q++ {
//		for r := 0; r < rows; r++ {
//			if !(scores[q*rows+r] <= thr[q]) { mask[q*words+r/64] |= 1 << (r % 64) }
//		}
//	}
//
// It is a variable so the SIMD path can replace it at start-up.
var keepMask = keepMaskGo

// keepMaskImpls lists every implementation by name, for the tests.
var keepMaskImpls = map[string]func(scores []float32, rows, nq int, thr []float32, mask []uint64){"go": keepMaskGo}

func keepMaskGo(scores []float32, rows, nq int, thr []float32, mask []uint64) {
	words := (rows + 63) / 64
	for q := 0; q < nq; q++ {
		s, th, m := scores[q*rows:q*rows+rows], thr[q], mask[q*words:q*words+words]
		clear(m)
		for r, v := range s {
			if !(v <= th) {
				m[r/64] |= 1 << (r % 64)
			}
		}
	}
}
