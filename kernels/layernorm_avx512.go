//go:build cgo && amd64 && !purego

package kernels

/*
#cgo CFLAGS: -O3
#include <immintrin.h>
#include <math.h>

// layer_norm_row512: out = (x − mean)/√(var + eps)·gamma + beta over one
// row of n values, 16 lanes at a time with the tail under a mask. Two
// passes (the mean, then the squared deviations, both summed in double)
// keep the variance exact enough when the mean is large, and finite for
// any finite row.
// out may alias x.
__attribute__((target("avx512f")))
static void layer_norm_row512(const float* x, const float* gamma, const float* beta, float* out, int n, float eps) {
	__m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
	for (int j = 0; j < n; j += 16) {
		__mmask16 mk = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1);
		__m512 v = _mm512_maskz_loadu_ps(mk, x + j);
		s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
		s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
	}
	double mean = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1)) / n;
	// x − mean as (x − hi) − lo: x − hi is exact near the mean, so a mean
	// far from zero loses nothing to float32 rounding.
	float hi = (float)mean, lo = (float)(mean - (double)hi);
	__m512 hv = _mm512_set1_ps(hi), lv = _mm512_set1_ps(lo);
	__m512d q0 = _mm512_setzero_pd(), q1 = _mm512_setzero_pd(); // squares in double: no overflow below 1.8e19
	for (int j = 0; j < n; j += 16) {
		__mmask16 mk = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1);
		__m512 d = _mm512_maskz_sub_ps(mk, _mm512_sub_ps(_mm512_maskz_loadu_ps(mk, x + j), hv), lv);
		__m512d d0 = _mm512_cvtps_pd(_mm512_castps512_ps256(d));
		__m512d d1 = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(d), 1)));
		q0 = _mm512_fmadd_pd(d0, d0, q0);
		q1 = _mm512_fmadd_pd(d1, d1, q1);
	}
	double var = _mm512_reduce_add_pd(_mm512_add_pd(q0, q1));
	__m512 iv = _mm512_set1_ps((float)(1 / sqrt(var / n + (double)eps)));
	for (int j = 0; j < n; j += 16) {
		__mmask16 mk = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1);
		__m512 y = _mm512_mul_ps(_mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, x + j), hv), lv), iv);
		y = _mm512_fmadd_ps(y, _mm512_maskz_loadu_ps(mk, gamma + j), _mm512_maskz_loadu_ps(mk, beta + j));
		_mm512_mask_storeu_ps(out + j, mk, y);
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
		layerNormImpls["avx512"] = layerNormRowAVX512
		layerNormRow = layerNormRowAVX512
	}
}

func layerNormRowAVX512(x, gamma, beta, out []float32, eps float32) {
	n := len(x)
	if n == 0 {
		return
	}
	_, _, _ = gamma[n-1], beta[n-1], out[n-1]
	C.layer_norm_row512((*C.float)(unsafe.Pointer(&x[0])), (*C.float)(unsafe.Pointer(&gamma[0])), (*C.float)(unsafe.Pointer(&beta[0])),
		(*C.float)(unsafe.Pointer(&out[0])), C.int(n), C.float(eps))
}
