//go:build cgo && amd64 && !purego

package kernels

/*
#cgo CFLAGS: -O3
#include <immintrin.h>
#include <stddef.h>
#include "cthreads.h"
#include "packedseed.h"

enum { PANEL = 32, KC = 256, MC = 1024 };

// tile8x32 is the kernel's core: 8 rows of C × one 32-column panel over kc
// steps of k, 16 accumulators in registers; each step loads the panel's
// row (2 vectors) once for 8 broadcasts and 16 FMAs (12 rows measured no
// faster: a 128-row batch then ends in slow partial tiles).
__attribute__((target("avx512f")))
static void tile8x32(const float* A, int lda, const float* bp, int kc, float* C, int ldc, int first) {
	__m512 c[8][2];
	for (int r = 0; r < 8; r++) {
		c[r][0] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(C + (size_t)r * ldc);
		c[r][1] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(C + (size_t)r * ldc + 16);
	}
	for (int p = 0; p < kc; p++) {
		__m512 b0 = _mm512_loadu_ps(bp + (size_t)p * PANEL), b1 = _mm512_loadu_ps(bp + (size_t)p * PANEL + 16);
		for (int r = 0; r < 8; r++) {
			__m512 a = _mm512_set1_ps(A[(size_t)r * lda + p]);
			c[r][0] = _mm512_fmadd_ps(a, b0, c[r][0]);
			c[r][1] = _mm512_fmadd_ps(a, b1, c[r][1]);
		}
	}
	for (int r = 0; r < 8; r++) {
		_mm512_storeu_ps(C + (size_t)r * ldc, c[r][0]);
		_mm512_storeu_ps(C + (size_t)r * ldc + 16, c[r][1]);
	}
}

// tile_edge is tile8x32 for a partial tile: mr < 8 rows or nc < 32
// columns, the columns beyond nc masked off.
__attribute__((target("avx512f")))
static void tile_edge(const float* A, int lda, const float* bp, int kc, float* C, int ldc, int mr, int nc, int first) {
	__mmask16 m0 = nc >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << nc) - 1);
	__mmask16 m1 = nc >= 32 ? (__mmask16)0xffff : nc > 16 ? (__mmask16)((1u << (nc - 16)) - 1) : 0;
	for (int r = 0; r < mr; r++) {
		const float* a = A + (size_t)r * lda;
		float* cr = C + (size_t)r * ldc;
		__m512 c0 = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m0, cr);
		__m512 c1 = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m1, cr + 16);
		for (int p = 0; p < kc; p++) {
			__m512 av = _mm512_set1_ps(a[p]);
			c0 = _mm512_fmadd_ps(av, _mm512_loadu_ps(bp + (size_t)p * PANEL), c0);
			c1 = _mm512_fmadd_ps(av, _mm512_loadu_ps(bp + (size_t)p * PANEL + 16), c1);
		}
		_mm512_mask_storeu_ps(cr, m0, c0);
		_mm512_mask_storeu_ps(cr + 16, m1, c1);
	}
}

// gemm_packed512 computes panels [p0, p1) of C = bias (+ C) + A·B (bias
// may be null: then C (+)= A·B), blocked as the Go twin: rows by MC, k by
// KC, then each panel's slice over the block's rows eight at a time. The
// bias is added to C first (packed_seed), over this call's panels only.
__attribute__((target("avx512f")))
static void gemm_packed512(const float* A, int lda, int m, int k, const float* P, int p0, int p1, int n, float* C, int ldc, int acc, const float* bias) {
	if (bias) {
		packed_seed(C, ldc, m, p0 * PANEL, p1 * PANEL < n ? p1 * PANEL : n, bias, acc);
		acc = 1;
	}
	for (int ib = 0; ib < m; ib += MC) {
		int ie = ib + MC < m ? ib + MC : m;
		for (int kb = 0; kb < k; kb += KC) {
			int kc = k - kb < KC ? k - kb : KC;
			int first = kb == 0 && !acc;
			for (int p = p0; p < p1; p++) {
				const float* bp = P + ((size_t)p * k + kb) * PANEL;
				int j0 = p * PANEL, nc = n - j0 < PANEL ? n - j0 : PANEL;
				for (int i = ib; i < ie; i += 8) {
					const float* a = A + (size_t)i * lda + kb;
					float* c = C + (size_t)i * ldc + j0;
					if (ie - i >= 8 && nc == PANEL) tile8x32(a, lda, bp, kc, c, ldc, first);
					else tile_edge(a, lda, bp, kc, c, ldc, ie - i < 8 ? ie - i : 8, nc, first);
				}
			}
		}
	}
}

// gemm_packed512_threads runs gemm_packed512 over every panel in parts on
// the C side's workers (ct_panels); 0: nothing ran (the workers were busy, or
// none could start).
static int gemm_packed512_threads(const float* A, int lda, int m, int k, const float* P, int panels, int n, float* C, int ldc, int acc, const float* bias, int parts) {
	return ct_panels(gemm_packed512, A, lda, m, k, P, panels, n, C, ldc, acc, bias, parts);
}
*/
import "C"

import "golang.org/x/sys/cpu"

func init() {
	if cpu.X86.HasAVX512F {
		gemmPackedImpls["avx512"] = gemmPackedPanelsAVX512
		gemmPackedPanels = gemmPackedPanelsAVX512
		gemmPackedThreads = gemmPackedThreadsAVX512
		cWorkers = cWorkersHooks{
			started: func() int { return int(C.ct_started()) },
			hold:    func(on bool) { C.ct_hold(b2i(on)) },
		}
		packedGemmFast = true
	}
}

func gemmPackedPanelsAVX512(p *packedProduct, p0, p1 int) {
	ok, acc := p.work(p0, p1)
	if !ok {
		return
	}
	C.gemm_packed512(f32p(p.a), C.int(p.lda), C.int(p.m), C.int(p.k), f32p(p.data),
		C.int(p0), C.int(p1), C.int(p.n), f32p(p.c), C.int(p.ldc), C.int(acc), f32p(p.bias))
}

func gemmPackedThreadsAVX512(p *packedProduct, panels, parts int) bool {
	ok, acc := p.work(0, panels)
	if !ok {
		return true
	}
	return C.gemm_packed512_threads(f32p(p.a), C.int(p.lda), C.int(p.m), C.int(p.k), f32p(p.data),
		C.int(panels), C.int(p.n), f32p(p.c), C.int(p.ldc), C.int(acc), f32p(p.bias), C.int(min(parts, C.CT_MAX_PARTS))) != 0
}
