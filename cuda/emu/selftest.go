//go:build cgo && !purego

package emu

/*
void emu_warp_selftest(unsigned grid, unsigned bx, unsigned by, int* out, int* counters, float* fsum, double* xsum);
*/
import "C"

// selfTestShuffles is how many shuffle results selftest.cc's kernel
// writes per thread.
const selfTestShuffles = 8

// warpSelfTest runs selftest.cc's kernel over grid blocks of bx × by
// threads: every thread's shuffle results, the atomics' counters (adds,
// max id, CAS winners, the CAS word), the float atomic sum and every
// thread's butterfly sum.
func warpSelfTest(grid, bx, by int) (shuffles []int32, counters [4]int32, fsum float32, xsum []float64) {
	n := grid * bx * by
	shuffles, xsum = make([]int32, n*selfTestShuffles), make([]float64, n)
	counters = [4]int32{0, -1, 0, -1}
	C.emu_warp_selftest(C.unsigned(grid), C.unsigned(bx), C.unsigned(by), (*C.int)(&shuffles[0]), (*C.int)(&counters[0]),
		(*C.float)(&fsum), (*C.double)(&xsum[0]))
	return shuffles, counters, fsum, xsum
}
