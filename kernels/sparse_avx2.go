//go:build cgo && amd64 && !purego

package kernels

/*
#cgo CFLAGS: -O3
#cgo LDFLAGS: -lm
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stddef.h>

// spmm_rows: Y[i,:] = sum_p val[p] * X[idx[p],:] for rows [lo, hi). Columns
// go in chunks of 64 held in eight AVX registers; the X rows of upcoming
// entries are prefetched, since gathers from a matrix larger than the cache
// are latency-bound.
__attribute__((target("avx2,fma")))
static void spmm_rows(const int64_t* ptr, const int32_t* idx, const float* val, const float* x, int d, float* y, int lo, int hi) {
	for (int i = lo; i < hi; i++) {
		float* out = y + (size_t)i * d;
		int64_t p0 = ptr[i], p1 = ptr[i + 1];
		int c0 = 0;
		for (; c0 + 64 <= d; c0 += 64) {
			__m256 acc[8];
			for (int k = 0; k < 8; k++) acc[k] = _mm256_setzero_ps();
			for (int64_t p = p0; p < p1; p++) {
				if (p + 8 < ptr[hi]) { // the X row of the entry 8 ahead, across row boundaries
					const char* nx = (const char*)(x + (size_t)idx[p + 8] * d + c0);
					for (int l = 0; l < 256; l += 64) __builtin_prefetch(nx + l);
				}
				const float* xr = x + (size_t)idx[p] * d + c0;
				__m256 w = _mm256_set1_ps(val ? val[p] : 1.0f);
				for (int k = 0; k < 8; k++) acc[k] = _mm256_fmadd_ps(w, _mm256_loadu_ps(xr + 8 * k), acc[k]);
			}
			for (int k = 0; k < 8; k++) _mm256_storeu_ps(out + c0 + 8 * k, acc[k]);
		}
		if (c0 < d) {
			for (int c = c0; c < d; c++) out[c] = 0;
			for (int64_t p = p0; p < p1; p++) {
				const float* xr = x + (size_t)idx[p] * d;
				float w = val ? val[p] : 1.0f;
				int c = c0;
				for (; c + 8 <= d; c += 8)
					_mm256_storeu_ps(out + c, _mm256_fmadd_ps(_mm256_set1_ps(w), _mm256_loadu_ps(xr + c), _mm256_loadu_ps(out + c)));
				for (; c < d; c++) out[c] += w * xr[c];
			}
		}
	}
}

__attribute__((target("avx2,fma")))
static float dot3(const float* a, const float* b, const float* c, int n) {
	__m256 acc = _mm256_setzero_ps();
	int j = 0;
	for (; j + 8 <= n; j += 8)
		acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(b + j)), _mm256_loadu_ps(c + j), acc);
	__m128 lo = _mm256_castps256_ps128(acc), hi = _mm256_extractf128_ps(acc, 1);
	lo = _mm_add_ps(lo, hi);
	lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
	lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
	float s = _mm_cvtss_f32(lo);
	for (; j < n; j++) s += a[j] * b[j] * c[j];
	return s;
}

// edge_attend_rows: Exphormer attention for destinations [lo, hi); z has
// room for one sum per head.
__attribute__((target("avx2,fma")))
static void edge_attend_rows(const int64_t* ptr, const int32_t* src, const int32_t* erow, const float* K, const float* Q, const float* V,
		const float* E, float* out, int heads, int hd, float scale, float* z, int lo, int hi) {
	int d = heads * hd;
	for (int i = lo; i < hi; i++) {
		float* o = out + (size_t)i * d;
		const float* q = Q + (size_t)i * d;
		for (int c = 0; c < d; c++) o[c] = 0;
		for (int h = 0; h < heads; h++) z[h] = 0;
		for (int64_t p = ptr[i]; p < ptr[i + 1]; p++) {
			if (p + 8 < ptr[hi]) { // K and V rows of the edge 8 ahead, across row boundaries
				const char* nk = (const char*)(K + (size_t)src[p + 8] * d);
				const char* nv = (const char*)(V + (size_t)src[p + 8] * d);
				for (int l = 0; l < d * 4; l += 64) { __builtin_prefetch(nk + l); __builtin_prefetch(nv + l); }
			}
			const float* k = K + (size_t)src[p] * d;
			const float* v = V + (size_t)src[p] * d;
			const float* e = E + (size_t)(erow ? erow[p] : p) * d;
			for (int h = 0; h < heads; h++) {
				int off = h * hd;
				float logit = dot3(k + off, q + off, e + off, hd) * scale;
				logit = logit < -5 ? -5 : (logit > 5 ? 5 : logit);
				float s = expf(logit);
				z[h] += s;
				int c = 0;
				__m256 sv = _mm256_set1_ps(s);
				for (; c + 8 <= hd; c += 8)
					_mm256_storeu_ps(o + off + c, _mm256_fmadd_ps(sv, _mm256_loadu_ps(v + off + c), _mm256_loadu_ps(o + off + c)));
				for (; c < hd; c++) o[off + c] += s * v[off + c];
			}
		}
		for (int h = 0; h < heads; h++) {
			float inv = 1.0f / (z[h] + 1e-6f);
			for (int c = h * hd; c < (h + 1) * hd; c++) o[c] *= inv;
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
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		spmmRange = spmmRangeAVX2
		edgeAttendRange = edgeAttendRangeAVX2
	}
}

func f32p(s []float32) *C.float {
	if len(s) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&s[0]))
}

// spmmRangeAVX2 is the SIMD twin of spmmRangeGo; arguments were checked by
// SpMM.
func spmmRangeAVX2(a *CSRMatrix, x []float32, d int, y []float32, lo, hi int) {
	if hi <= lo || d == 0 {
		return
	}
	var idx *C.int32_t
	if len(a.Idx) > 0 {
		idx = (*C.int32_t)(unsafe.Pointer(&a.Idx[0]))
	}
	C.spmm_rows((*C.int64_t)(unsafe.Pointer(&a.Ptr[0])), idx, f32p(a.Val), f32p(x), C.int(d), f32p(y), C.int(lo), C.int(hi))
}

// edgeAttendRangeAVX2 is the SIMD twin of edgeAttendRangeGo.
func edgeAttendRangeAVX2(a *EdgeAttentionArgs, scale float32, z []float32, lo, hi int) {
	if hi <= lo {
		return
	}
	var src *C.int32_t
	if len(a.Src) > 0 {
		src = (*C.int32_t)(unsafe.Pointer(&a.Src[0]))
	}
	var erow *C.int32_t
	if len(a.ERow) > 0 {
		erow = (*C.int32_t)(unsafe.Pointer(&a.ERow[0]))
	}
	C.edge_attend_rows((*C.int64_t)(unsafe.Pointer(&a.Ptr[0])), src, erow, f32p(a.K), f32p(a.Q), f32p(a.V), f32p(a.E), f32p(a.Out),
		C.int(a.Heads), C.int(a.HeadDim), C.float(scale), f32p(z), C.int(lo), C.int(hi))
}
