//go:build cgo && amd64 && !purego

package kernels

/*
#cgo CFLAGS: -O3
#include <immintrin.h>
#include "exp512.h"

// gelu512: GELU of 16 lanes in float32. erfc(z) for z = |x|/√2 is
// Abramowitz & Stegun 7.1.26, t·(a1 + … + a5·t⁴)·e^(−z²) with
// t = 1/(1 + p·z) (absolute error below 1.5e-7). GELU is then
// x·(1 − erfc/2) for x ≥ 0 and x·erfc/2 below: neither form subtracts
// nearly equal numbers, so float32 keeps the approximation's accuracy
// where 1 + erf(z) would cancel. A NaN input stays NaN (the last product
// is by x).
__attribute__((target("avx512f")))
static inline __m512 gelu512(__m512 x) {
	__m512 z = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.70710678118654752f));
	__m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(z, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f)));
	__m512 p = _mm512_set1_ps(1.061405429f);
	p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
	p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
	p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
	p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
	__m512 half = _mm512_mul_ps(_mm512_mul_ps(p, t), _mm512_mul_ps(exp512(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), z), z)), _mm512_set1_ps(0.5f)));
	__mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
	__m512 phi = _mm512_mask_blend_ps(neg, _mm512_sub_ps(_mm512_set1_ps(1.0f), half), half);
	// −Inf·0 would be NaN: −Inf becomes −FLT_MAX first, so GELU(−Inf) is
	// −0, the limit (MAXPS returns its second operand, x, when x is NaN).
	return _mm512_mul_ps(_mm512_max_ps(_mm512_set1_ps(-3.40282347e38f), x), phi);
}

// gelu_bias_row512 computes row[j] = gelu(row[j] + bias[j]) (bias may be
// NULL), 16 lanes at a time, the tail under a mask.
__attribute__((target("avx512f")))
static void gelu_bias_row512(float* row, const float* bias, int n) {
	for (int j = 0; j < n; j += 16) {
		__mmask16 m = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1);
		__m512 x = _mm512_maskz_loadu_ps(m, row + j);
		if (bias) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, bias + j));
		_mm512_mask_storeu_ps(row + j, m, gelu512(x));
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
		geluImpls["avx512"] = geluBiasRowAVX512
		geluBiasRow = geluBiasRowAVX512
	}
}

// geluBiasRowAVX512 is geluBiasRow in float32 on 16 lanes; it differs from
// the float64 Go twin by at most about 2e-7·|x| (tested against math.Erf).
func geluBiasRowAVX512(row, bias []float32) {
	if len(row) == 0 {
		return
	}
	var bp *C.float
	if bias != nil {
		_ = bias[len(row)-1]
		bp = (*C.float)(unsafe.Pointer(&bias[0]))
	}
	C.gelu_bias_row512((*C.float)(unsafe.Pointer(&row[0])), bp, C.int(len(row)))
}
