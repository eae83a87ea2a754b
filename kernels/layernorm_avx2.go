//go:build cgo && amd64 && !purego

package kernels

/*
#cgo CFLAGS: -O3
#include <immintrin.h>
#include <math.h>

// sum4d adds the four lanes of v.
__attribute__((target("avx2,fma")))
static inline double sum4d(__m256d v) {
	__m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
	return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

// tail_mask256 has lanes [0, left) set, for the last step of a row whose
// length is not a multiple of 8.
__attribute__((target("avx2,fma")))
static inline __m256i tail_mask256(int left) {
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// layer_norm_row256 is layer_norm_row512 (layernorm_avx512.go) in 8-lane
// steps: two passes summed in double, x − mean as (x − hi) − lo. Only the
// tail step is masked: AMD's Zen cores microcode VMASKMOVPS stores, and a
// row of masked steps took 0.5 µs at 384 values. out may alias x.
__attribute__((target("avx2,fma")))
static void layer_norm_row256(const float* x, const float* gamma, const float* beta, float* out, int n, float eps) {
	int full = n & ~7;
	__m256i mk = tail_mask256(n - full);
	__m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
	for (int j = 0; j < n; j += 8) {
		__m256 v = j < full ? _mm256_loadu_ps(x + j) : _mm256_maskload_ps(x + j, mk);
		s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
		s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
	}
	double mean = sum4d(_mm256_add_pd(s0, s1)) / n;
	float hi = (float)mean, lo = (float)(mean - (double)hi);
	__m256 hv = _mm256_set1_ps(hi), lv = _mm256_set1_ps(lo);
	__m256d q0 = _mm256_setzero_pd(), q1 = _mm256_setzero_pd();
	for (int j = 0; j < n; j += 8) {
		__m256 v = j < full ? _mm256_loadu_ps(x + j) : _mm256_maskload_ps(x + j, mk);
		__m256 d = _mm256_sub_ps(_mm256_sub_ps(v, hv), lv);
		if (j == full) d = _mm256_and_ps(d, _mm256_castsi256_ps(mk));
		__m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(d)), d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(d, 1));
		q0 = _mm256_fmadd_pd(d0, d0, q0);
		q1 = _mm256_fmadd_pd(d1, d1, q1);
	}
	double var = sum4d(_mm256_add_pd(q0, q1));
	__m256 iv = _mm256_set1_ps((float)(1 / sqrt(var / n + (double)eps)));
	for (int j = 0; j < full; j += 8) {
		__m256 y = _mm256_mul_ps(_mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), hv), lv), iv);
		_mm256_storeu_ps(out + j, _mm256_fmadd_ps(y, _mm256_loadu_ps(gamma + j), _mm256_loadu_ps(beta + j)));
	}
	if (full < n) {
		__m256 y = _mm256_mul_ps(_mm256_sub_ps(_mm256_sub_ps(_mm256_maskload_ps(x + full, mk), hv), lv), iv);
		y = _mm256_fmadd_ps(y, _mm256_maskload_ps(gamma + full, mk), _mm256_maskload_ps(beta + full, mk));
		_mm256_maskstore_ps(out + full, mk, y);
	}
}
*/
import "C"

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// init installs the AVX2 row where the CPU has AVX2 and FMA;
// layernorm_avx512.go's init, which runs after this one, replaces it where
// the CPU has AVX-512.
func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		layerNormImpls["avx2"] = layerNormRowAVX2
		layerNormRow = layerNormRowAVX2
	}
}

func layerNormRowAVX2(x, gamma, beta, out []float32, eps float32) {
	n := len(x)
	if n == 0 {
		return
	}
	_, _, _ = gamma[n-1], beta[n-1], out[n-1]
	C.layer_norm_row256((*C.float)(unsafe.Pointer(&x[0])), (*C.float)(unsafe.Pointer(&gamma[0])), (*C.float)(unsafe.Pointer(&beta[0])),
		(*C.float)(unsafe.Pointer(&out[0])), C.int(n), C.float(eps))
}
