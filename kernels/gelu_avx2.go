//go:build cgo && amd64 && !purego

package kernels

/*
#cgo CFLAGS: -O3
#include <immintrin.h>
#include "exp256.h"

// gelu256 is gelu512 (gelu_avx512.go) on 8 lanes: erfc(|x|/√2) by
// Abramowitz & Stegun 7.1.26 in float32, then x·(1 − erfc/2) for x ≥ 0
// and x·erfc/2 below, so nothing cancels. A NaN stays NaN.
__attribute__((target("avx2,fma")))
static inline __m256 gelu256(__m256 x) {
	__m256 z = _mm256_mul_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x), _mm256_set1_ps(0.70710678118654752f));
	__m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(z, _mm256_set1_ps(0.3275911f), _mm256_set1_ps(1.0f)));
	__m256 p = _mm256_set1_ps(1.061405429f);
	p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
	p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
	p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
	p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
	__m256 half = _mm256_mul_ps(_mm256_mul_ps(p, t), _mm256_mul_ps(exp256(_mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), z), z)), _mm256_set1_ps(0.5f)));
	__m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
	__m256 phi = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(1.0f), half), half, neg);
	// −Inf·0 would be NaN: −Inf becomes −FLT_MAX first, so GELU(−Inf) is
	// −0, the limit (MAXPS returns its second operand, x, when x is NaN).
	return _mm256_mul_ps(_mm256_max_ps(_mm256_set1_ps(-3.40282347e38f), x), phi);
}

// gelu_bias_row computes row[j] = gelu(row[j] + bias[j]) (bias may be
// NULL), 8 lanes at a time; only the tail step is masked (Zen cores
// microcode masked stores).
__attribute__((target("avx2,fma")))
static void gelu_bias_row(float* row, const float* bias, int n) {
	int j = 0;
	for (; j + 8 <= n; j += 8) {
		__m256 x = _mm256_loadu_ps(row + j);
		if (bias) x = _mm256_add_ps(x, _mm256_loadu_ps(bias + j));
		_mm256_storeu_ps(row + j, gelu256(x));
	}
	if (j < n) {
		__m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(n - j), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
		__m256 x = _mm256_maskload_ps(row + j, m);
		if (bias) x = _mm256_add_ps(x, _mm256_maskload_ps(bias + j, m));
		_mm256_maskstore_ps(row + j, m, gelu256(x));
	}
}
*/
import "C"

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		geluImpls["avx2"] = geluBiasRowAVX2
		geluBiasRow = geluBiasRowAVX2
	}
}

// geluBiasRowAVX2 is geluBiasRow in float32 on 8 lanes; like the AVX-512
// row it differs from the float64 Go twin by at most about 2e-7·|x|
// (tested against math.Erf).
func geluBiasRowAVX2(row, bias []float32) {
	if len(row) == 0 {
		return
	}
	var bp *C.float
	if bias != nil {
		_ = bias[len(row)-1]
		bp = (*C.float)(unsafe.Pointer(&bias[0]))
	}
	C.gelu_bias_row((*C.float)(unsafe.Pointer(&row[0])), bp, C.int(len(row)))
}
