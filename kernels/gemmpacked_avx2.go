//go:build cgo && amd64 && !purego

package kernels

/*
#cgo CFLAGS: -O3
#include <immintrin.h>
#include <stddef.h>
#include "cthreads.h"

enum { PANEL2 = 32, HALF2 = 16, KC2 = 256, MC2 = 256, MR2 = 6 };

// tile_avx2 is the AVX2 kernel's core: mr ≤ 6 rows of C × one 16-column
// half of a packed panel over kc steps of k, 12 accumulators in registers
// (AVX2 has 16); each step loads the half-panel's row (2 vectors, one
// cache line) once for mr broadcasts and 2·mr FMAs. nc < 16 columns are
// stored under a mask (the packed panel is zero past n, so the loads need
// none). bias, when not null (the first block of k only), is added to C
// before the sums, or is where they start when first: the values a pass
// seeding C with the bias would have left there. Every lane's sum runs
// over p in the same order whatever mr is, so a row's result does not
// depend on the rows beside it. Inlined with a constant mr, the compiler
// keeps the accumulators in registers.
__attribute__((target("avx2,fma"), always_inline))
static inline void tile_avx2(const int mr, const float* A, int lda, const float* bp, int kc, float* C, int ldc, int nc, int first, const float* bias) {
	__m256 c[MR2][2], bv0 = _mm256_setzero_ps(), bv1 = _mm256_setzero_ps();
	__m256i m0 = _mm256_set1_epi32(-1), m1 = _mm256_set1_epi32(-1);
	int full = nc == HALF2;
	if (!full) {
		const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
		m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(nc), lane);
		m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(nc - 8), lane);
	}
	if (bias) {
		bv0 = _mm256_maskload_ps(bias, m0);
		bv1 = _mm256_maskload_ps(bias + 8, m1);
	}
	for (int r = 0; r < mr; r++) {
		if (first) {
			c[r][0] = bv0;
			c[r][1] = bv1;
			continue;
		}
		if (full) {
			c[r][0] = _mm256_loadu_ps(C + (size_t)r * ldc);
			c[r][1] = _mm256_loadu_ps(C + (size_t)r * ldc + 8);
		} else {
			c[r][0] = _mm256_maskload_ps(C + (size_t)r * ldc, m0);
			c[r][1] = _mm256_maskload_ps(C + (size_t)r * ldc + 8, m1);
		}
		if (bias) {
			c[r][0] = _mm256_add_ps(c[r][0], bv0);
			c[r][1] = _mm256_add_ps(c[r][1], bv1);
		}
	}
	for (int p = 0; p < kc; p++) {
		__m256 b0 = _mm256_loadu_ps(bp + (size_t)p * PANEL2), b1 = _mm256_loadu_ps(bp + (size_t)p * PANEL2 + 8);
		for (int r = 0; r < mr; r++) {
			__m256 a = _mm256_broadcast_ss(A + (size_t)r * lda + p);
			c[r][0] = _mm256_fmadd_ps(a, b0, c[r][0]);
			c[r][1] = _mm256_fmadd_ps(a, b1, c[r][1]);
		}
	}
	for (int r = 0; r < mr; r++) {
		if (full) {
			_mm256_storeu_ps(C + (size_t)r * ldc, c[r][0]);
			_mm256_storeu_ps(C + (size_t)r * ldc + 8, c[r][1]);
		} else {
			_mm256_maskstore_ps(C + (size_t)r * ldc, m0, c[r][0]);
			_mm256_maskstore_ps(C + (size_t)r * ldc + 8, m1, c[r][1]);
		}
	}
}

// gemm_packed_avx2 computes panels [p0, p1) of C = bias (+ C) + A·B (bias
// may be null), blocked as the Go twin (rows by MC, k by KC), each panel
// as two 16-column halves, each half six rows at a time and the rest in
// one tile of fewer rows.
__attribute__((target("avx2,fma")))
static void gemm_packed_avx2(const float* A, int lda, int m, int k, const float* P, int p0, int p1, int n, float* C, int ldc, int acc, const float* bias) {
	for (int ib = 0; ib < m; ib += MC2) {
		int ie = ib + MC2 < m ? ib + MC2 : m;
		for (int kb = 0; kb < k; kb += KC2) {
			int kc = k - kb < KC2 ? k - kb : KC2, first = kb == 0 && !acc;
			for (int p = p0; p < p1; p++) {
				for (int h = 0; h < PANEL2; h += HALF2) {
					int j0 = p * PANEL2 + h, nc = n - j0 < HALF2 ? n - j0 : HALF2;
					if (nc <= 0) break;
					const float* bp = P + ((size_t)p * k + kb) * PANEL2 + h;
					const float* bj = bias && kb == 0 ? bias + j0 : 0;
					int i = ib;
					for (; ie - i >= MR2; i += MR2)
						tile_avx2(6, A + (size_t)i * lda + kb, lda, bp, kc, C + (size_t)i * ldc + j0, ldc, nc, first, bj);
					const float* a = A + (size_t)i * lda + kb;
					float* c = C + (size_t)i * ldc + j0;
					switch (ie - i) {
					case 5: tile_avx2(5, a, lda, bp, kc, c, ldc, nc, first, bj); break;
					case 4: tile_avx2(4, a, lda, bp, kc, c, ldc, nc, first, bj); break;
					case 3: tile_avx2(3, a, lda, bp, kc, c, ldc, nc, first, bj); break;
					case 2: tile_avx2(2, a, lda, bp, kc, c, ldc, nc, first, bj); break;
					case 1: tile_avx2(1, a, lda, bp, kc, c, ldc, nc, first, bj); break;
					}
				}
			}
		}
	}
}

// gemm_packed_avx2_threads runs gemm_packed_avx2 over every panel in parts on
// the C side's workers (ct_panels); 0: nothing ran (the workers were busy, or
// none could start).
static int gemm_packed_avx2_threads(const float* A, int lda, int m, int k, const float* P, int panels, int n, float* C, int ldc, int acc, const float* bias, int parts) {
	return ct_panels(gemm_packed_avx2, A, lda, m, k, P, panels, n, C, ldc, acc, bias, parts);
}
*/
import "C"

import "golang.org/x/sys/cpu"

// init installs the AVX2 kernel where the CPU has AVX2 and FMA;
// gemmpacked_avx512.go's init, which runs after this one, replaces it
// where the CPU has AVX-512.
func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		gemmPackedImpls["avx2"] = gemmPackedPanelsAVX2
		gemmPackedPanels = gemmPackedPanelsAVX2
		gemmPackedThreads = gemmPackedThreadsAVX2
		cWorkers = cWorkersHooks{
			started: func() int { return int(C.ct_started()) },
			hold:    func(on bool) { C.ct_hold(b2i(on)) },
		}
		packedGemmFast = true
	}
}

func gemmPackedPanelsAVX2(p *packedProduct, p0, p1 int) {
	ok, acc := p.work(p0, p1)
	if !ok {
		return
	}
	C.gemm_packed_avx2(f32p(p.a), C.int(p.lda), C.int(p.m), C.int(p.k), f32p(p.data),
		C.int(p0), C.int(p1), C.int(p.n), f32p(p.c), C.int(p.ldc), C.int(acc), f32p(p.bias))
}

func gemmPackedThreadsAVX2(p *packedProduct, panels, parts int) bool {
	ok, acc := p.work(0, panels)
	if !ok {
		return true
	}
	return C.gemm_packed_avx2_threads(f32p(p.a), C.int(p.lda), C.int(p.m), C.int(p.k), f32p(p.data),
		C.int(panels), C.int(p.n), f32p(p.c), C.int(p.ldc), C.int(acc), f32p(p.bias), C.int(min(parts, C.CT_MAX_PARTS))) != 0
}
