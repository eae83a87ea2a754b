//go:build cgo && !purego

package emu

/*
void emu_warp_selftest(unsigned grid, int* out, int* counters, float* fsum, float* xsum);
*/
import "C"

// warpSelfTest runs selftest.cc's kernel over grid blocks of 64 threads:
// block 0's six shuffle results per thread, the atomics' counters
// (adds, max id, CAS winners, the CAS word) and float sum, and each
// thread's butterfly sum.
func warpSelfTest(grid int) (shuffles []int32, counters [4]int32, fsum float32, xsum []float32) {
	shuffles, xsum = make([]int32, 64*6), make([]float32, 64)
	counters = [4]int32{0, -1, 0, -1}
	C.emu_warp_selftest(C.unsigned(grid), (*C.int)(&shuffles[0]), (*C.int)(&counters[0]), (*C.float)(&fsum), (*C.float)(&xsum[0]))
	return shuffles, counters, fsum, xsum
}
