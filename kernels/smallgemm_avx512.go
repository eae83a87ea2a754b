//go:build cgo && amd64 && !purego

package kernels

/*
#cgo CFLAGS: -O3
#include <immintrin.h>
#include <stddef.h>

// gemm_nn512: C (m×n) = A (m×k) · B (k×n), strided row-major, as gemm_nn
// but on 16 lanes and four rows of C at once: each step over k loads a
// row of B once for four broadcast-FMAs, so short k (attention's head
// dimension) and short n (its sequence length) both run at full width.
// Columns go 64 at a time, then 16, then a masked tail.
__attribute__((target("avx512f")))
static void gemm_nn512(const float* A, const float* B, float* C, int m, int n, int k, int lda, int ldb, int ldc) {
	int i = 0;
	for (; i + 4 <= m; i += 4) {
		const float* a = A + (size_t)i * lda;
		float* c = C + (size_t)i * ldc;
		int j = 0;
		for (; j + 64 <= n; j += 64) {
			__m512 acc[4][4];
			for (int r = 0; r < 4; r++) for (int v = 0; v < 4; v++) acc[r][v] = _mm512_setzero_ps();
			for (int p = 0; p < k; p++) {
				const float* b = B + (size_t)p * ldb + j;
				__m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16), b2 = _mm512_loadu_ps(b + 32), b3 = _mm512_loadu_ps(b + 48);
				for (int r = 0; r < 4; r++) {
					__m512 av = _mm512_set1_ps(a[(size_t)r * lda + p]);
					acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
					acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
					acc[r][2] = _mm512_fmadd_ps(av, b2, acc[r][2]);
					acc[r][3] = _mm512_fmadd_ps(av, b3, acc[r][3]);
				}
			}
			for (int r = 0; r < 4; r++) for (int v = 0; v < 4; v++) _mm512_storeu_ps(c + (size_t)r * ldc + j + 16 * v, acc[r][v]);
		}
		for (; j < n; j += 16) {
			__mmask16 mk = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1);
			__m512 acc[4];
			for (int r = 0; r < 4; r++) acc[r] = _mm512_setzero_ps();
			for (int p = 0; p < k; p++) {
				__m512 bv = _mm512_maskz_loadu_ps(mk, B + (size_t)p * ldb + j);
				for (int r = 0; r < 4; r++) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[(size_t)r * lda + p]), bv, acc[r]);
			}
			for (int r = 0; r < 4; r++) _mm512_mask_storeu_ps(c + (size_t)r * ldc + j, mk, acc[r]);
		}
	}
	for (; i < m; i++) {
		const float* a = A + (size_t)i * lda;
		float* c = C + (size_t)i * ldc;
		for (int j = 0; j < n; j += 16) {
			__mmask16 mk = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1);
			__m512 acc = _mm512_setzero_ps();
			for (int p = 0; p < k; p++) acc = _mm512_fmadd_ps(_mm512_set1_ps(a[p]), _mm512_maskz_loadu_ps(mk, B + (size_t)p * ldb + j), acc);
			_mm512_mask_storeu_ps(c + j, mk, acc);
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
		gemmNNImpls["avx512"] = gemmNNAVX512
		gemmNN = gemmNNAVX512
	}
}

func gemmNNAVX512(a, b, c []float32, m, n, k, lda, ldb, ldc int) {
	if !gemmNNNeedsKernel(a, b, c, m, n, k, lda, ldb, ldc) {
		return
	}
	C.gemm_nn512((*C.float)(unsafe.Pointer(&a[0])), (*C.float)(unsafe.Pointer(&b[0])), (*C.float)(unsafe.Pointer(&c[0])), C.int(m), C.int(n), C.int(k), C.int(lda), C.int(ldb), C.int(ldc))
}
