//go:build cgo && amd64 && !purego

package kernels

/*
#cgo CFLAGS: -O3
#include <immintrin.h>
#include <stddef.h>
#include "exp512.h"

// softmax_rows512: each of rows rows of x (cols values) → softmax, in
// place, 16 lanes at a time with the tail under a mask; the row's sum is
// reduced in double, as softmax_rows_nomask does. A row holding a NaN
// becomes all NaN.
__attribute__((target("avx512f")))
static void softmax_rows512(float* x, int rows, int cols) {
	for (int r = 0; r < rows; r++) {
		float* v = x + (size_t)r * cols;
		__m512 mv = _mm512_set1_ps(v[0]);
		__mmask16 nan = 0;
		for (int j = 0; j < cols; j += 16) {
			__mmask16 mk = cols - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (cols - j)) - 1);
			__m512 xv = _mm512_maskz_loadu_ps(mk, v + j);
			nan |= _mm512_mask_cmp_ps_mask(mk, xv, xv, _CMP_UNORD_Q);
			mv = _mm512_mask_max_ps(mv, mk, mv, xv);
		}
		if (nan) { // max would drop the NaN and exp's clamp hide it: the row is NaN, as in the Go twin
			for (int j = 0; j < cols; j++) v[j] = __builtin_nanf("");
			continue;
		}
		float m = _mm512_reduce_max_ps(mv);
		mv = _mm512_set1_ps(m);
		__m512 sv = _mm512_setzero_ps();
		for (int j = 0; j < cols; j += 16) {
			__mmask16 mk = cols - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (cols - j)) - 1);
			__m512 e = _mm512_maskz_mov_ps(mk, exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, v + j), mv)));
			_mm512_mask_storeu_ps(v + j, mk, e);
			sv = _mm512_add_ps(sv, e);
		}
		float buf[16];
		_mm512_storeu_ps(buf, sv);
		double s = 0;
		for (int t = 0; t < 16; t++) s += buf[t];
		__m512 iv = _mm512_set1_ps((float)(1.0 / s));
		for (int j = 0; j < cols; j += 16) {
			__mmask16 mk = cols - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (cols - j)) - 1);
			_mm512_mask_storeu_ps(v + j, mk, _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, v + j), iv));
		}
	}
}
*/
import "C"

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

func init() {
	if cpu.X86.HasAVX512F {
		softmaxImpls["avx512"] = softmaxNoMaskAVX512
		softmaxNoMask = softmaxNoMaskAVX512
	}
}

func softmaxNoMaskAVX512(x []float32, rows, cols int) {
	if rows == 0 || cols == 0 {
		return
	}
	_ = x[rows*cols-1]
	C.softmax_rows512((*C.float)(unsafe.Pointer(&x[0])), C.int(rows), C.int(cols))
}
