//go:build cgo && amd64 && !purego

package kernels

/*
#cgo CFLAGS: -O3
#include <immintrin.h>
#include "exp256.h"
#include <stddef.h>

// gemm_nn: C (m×n) = A (m×k) · B (k×n), row-major with leading dimensions
// lda, ldb, ldc. Each row of C
// is built in registers, 32 columns at a time, from k broadcast-FMAs over
// rows of B: no horizontal sums, so short k (attention head dims) runs at
// full width.
__attribute__((target("avx2,fma")))
static void gemm_nn(const float* A, const float* B, float* C, int m, int n, int k, int lda, int ldb, int ldc) {
	for (int i = 0; i < m; i++) {
		const float* a = A + (size_t)i * lda;
		float* c = C + (size_t)i * ldc;
		int j = 0;
		for (; j + 32 <= n; j += 32) {
			__m256 c0 = _mm256_setzero_ps(), c1 = _mm256_setzero_ps(), c2 = _mm256_setzero_ps(), c3 = _mm256_setzero_ps();
			for (int p = 0; p < k; p++) {
				const float* b = B + (size_t)p * ldb + j;
				__m256 av = _mm256_set1_ps(a[p]);
				c0 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b), c0);
				c1 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + 8), c1);
				c2 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + 16), c2);
				c3 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + 24), c3);
			}
			_mm256_storeu_ps(c + j, c0); _mm256_storeu_ps(c + j + 8, c1);
			_mm256_storeu_ps(c + j + 16, c2); _mm256_storeu_ps(c + j + 24, c3);
		}
		for (; j + 8 <= n; j += 8) {
			__m256 c0 = _mm256_setzero_ps();
			for (int p = 0; p < k; p++) c0 = _mm256_fmadd_ps(_mm256_set1_ps(a[p]), _mm256_loadu_ps(B + (size_t)p * ldb + j), c0);
			_mm256_storeu_ps(c + j, c0);
		}
		for (; j < n; j++) {
			float s = 0;
			for (int p = 0; p < k; p++) s += a[p] * B[(size_t)p * ldb + j];
			c[j] = s;
		}
	}
}

// softmax_rows_nomask: each of rows rows of x (cols values) → softmax, in place.
__attribute__((target("avx2,fma")))
static void softmax_rows_nomask(float* x, int rows, int cols) {
	for (int r = 0; r < rows; r++) {
		float* v = x + (size_t)r * cols;
		float m = v[0];
		int nan = v[0] != v[0];
		for (int j = 1; j < cols; j++) {
			m = v[j] > m ? v[j] : m;
			nan |= v[j] != v[j];
		}
		if (nan) { // the row is NaN, as in the Go twin
			for (int j = 0; j < cols; j++) v[j] = __builtin_nanf("");
			continue;
		}
		__m256 mv = _mm256_set1_ps(m), sv = _mm256_setzero_ps();
		int j = 0;
		for (; j + 8 <= cols; j += 8) {
			__m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(v + j), mv));
			_mm256_storeu_ps(v + j, e);
			sv = _mm256_add_ps(sv, e);
		}
		float buf[8];
		_mm256_storeu_ps(buf, sv);
		double s = 0;
		for (int t = 0; t < 8; t++) s += buf[t];
		for (; j < cols; j++) {
			__m256 e = exp256(_mm256_set1_ps(v[j] - m));
			v[j] = _mm256_cvtss_f32(e);
			s += v[j];
		}
		float inv = (float)(1.0 / s);
		__m256 iv = _mm256_set1_ps(inv);
		for (j = 0; j + 8 <= cols; j += 8) _mm256_storeu_ps(v + j, _mm256_mul_ps(_mm256_loadu_ps(v + j), iv));
		for (; j < cols; j++) v[j] *= inv;
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
		gemmNN, gemmNNImpls["avx2"] = gemmNNAVX2, gemmNNAVX2
		softmaxNoMask, softmaxImpls["avx2"] = softmaxNoMaskAVX2, softmaxNoMaskAVX2
	}
}

func gemmNNAVX2(a, b, c []float32, m, n, k, lda, ldb, ldc int) {
	if !gemmNNNeedsKernel(a, b, c, m, n, k, lda, ldb, ldc) {
		return
	}
	C.gemm_nn((*C.float)(unsafe.Pointer(&a[0])), (*C.float)(unsafe.Pointer(&b[0])), (*C.float)(unsafe.Pointer(&c[0])), C.int(m), C.int(n), C.int(k), C.int(lda), C.int(ldb), C.int(ldc))
}

func softmaxNoMaskAVX2(x []float32, rows, cols int) {
	if rows == 0 || cols == 0 {
		return
	}
	_ = x[rows*cols-1]
	C.softmax_rows_nomask((*C.float)(unsafe.Pointer(&x[0])), C.int(rows), C.int(cols))
}
