//go:build cgo && amd64 && !purego

package kernels

/*
#cgo CFLAGS: -O3
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

// keep_mask_avx512 is keepMask sixteen scores a compare: NLE_UQ is
// !(v <= thr), true where either side is NaN. The mask is written sixteen
// bits at a time; on little-endian x86 those are the uint64 words' bits in
// order.
__attribute__((target("avx512f")))
static void keep_mask_avx512(const float* scores, int rows, int nq, const float* thr, uint64_t* mask) {
	int words = (rows + 63) / 64;
	for (int q = 0; q < nq; q++) {
		const float* s = scores + (size_t)q * rows;
		uint16_t* m = (uint16_t*)(mask + (size_t)q * words);
		__m512 th = _mm512_set1_ps(thr[q]);
		int r = 0;
		for (; r + 16 <= rows; r += 16) m[r / 16] = _mm512_cmp_ps_mask(_mm512_loadu_ps(s + r), th, _CMP_NLE_UQ);
		if (r < rows) {
			__mmask16 tail = (__mmask16)((1u << (rows - r)) - 1);
			m[r / 16] = _mm512_mask_cmp_ps_mask(tail, _mm512_maskz_loadu_ps(tail, s + r), th, _CMP_NLE_UQ);
			r += 16;
		}
		for (; r < words * 64; r += 16) m[r / 16] = 0;
	}
}
*/
import "C"

import (
	"os"
	"unsafe"

	"golang.org/x/sys/cpu"
)

func init() {
	if !cpu.X86.HasAVX512F {
		return
	}
	keepMaskImpls["avx512"] = keepMaskAVX512
	if os.Getenv("GLEANER_DOT") != "avx2" { // as dotBlock's choice
		keepMask = keepMaskAVX512
	}
}

// keepMaskAVX512 is the AVX-512 fast path of keepMask.
func keepMaskAVX512(scores []float32, rows, nq int, thr []float32, mask []uint64) {
	if rows == 0 || nq == 0 {
		return
	}
	_, _, _ = scores[nq*rows-1], thr[nq-1], mask[nq*((rows+63)/64)-1]
	C.keep_mask_avx512((*C.float)(unsafe.Pointer(&scores[0])), C.int(rows), C.int(nq),
		(*C.float)(unsafe.Pointer(&thr[0])), (*C.uint64_t)(unsafe.Pointer(&mask[0])))
}
