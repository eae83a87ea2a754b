//go:build cgo && amd64 && !purego

package kernels

/*
#cgo CFLAGS: -O3
#include <immintrin.h>
#include <stddef.h>
#include "scantop.h"
#include <stdint.h>

__attribute__((target("avx2,fma")))
static inline float qhsum256(__m256 v) {
	__m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
	lo = _mm_add_ps(lo, hi);
	lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
	lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
	return _mm_cvtss_f32(lo);
}

// Eight quantized values as float32 lanes: sign-extended int8 codes, or
// bfloat16 moved to the top half of each lane.
__attribute__((target("avx2,fma")))
static inline __m256 ld8_i8(const int8_t* p) {
	return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)p)));
}
__attribute__((target("avx2,fma")))
static inline __m256 ld8_bf16(const uint16_t* p) {
	return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p)), 16));
}
static inline float one_i8(int8_t v) { return (float)v; }
static inline float one_bf16(uint16_t v) { union { uint32_t u; float f; } c; c.u = (uint32_t)v << 16; return c.f; }

// tile of R rows x Q queries (Q = 1 or 2): one 8-lane accumulator per (row,
// query) and the same summation in every shape, so a query's scores never
// depend on the batch it arrives in. Each row's lanes are converted once
// and reused for both queries.
#define QTILE(NAME, T, R, Q) \
__attribute__((target("avx2,fma"))) \
static void NAME##_##R##x##Q(const T* x, int d, const float* q, float* out, int rows) { \
	__m256 acc[R][Q]; \
	for (int r = 0; r < R; r++) for (int c = 0; c < Q; c++) acc[r][c] = _mm256_setzero_ps(); \
	int j = 0; \
	for (; j + 8 <= d; j += 8) { \
		__m256 qv[Q]; \
		for (int c = 0; c < Q; c++) qv[c] = _mm256_loadu_ps(q + (size_t)c * d + j); \
		for (int r = 0; r < R; r++) { \
			__m256 xr = ld8_##NAME(x + (size_t)r * d + j); \
			for (int c = 0; c < Q; c++) acc[r][c] = _mm256_fmadd_ps(xr, qv[c], acc[r][c]); \
		} \
	} \
	for (int r = 0; r < R; r++) for (int c = 0; c < Q; c++) { \
		float s = qhsum256(acc[r][c]); \
		for (int t = j; t < d; t++) s = __builtin_fmaf(one_##NAME(x[(size_t)r * d + t]), q[(size_t)c * d + t], s); \
		out[(size_t)c * rows + r] = s; \
	} \
}

#define QBLOCK(NAME, T) \
QTILE(NAME, T, 4, 2) QTILE(NAME, T, 1, 2) QTILE(NAME, T, 1, 1) \
static void dot_block_##NAME(const T* X, int rows, int d, const float* Q, int nq, float* out) { \
	int q = 0; \
	for (; q + 2 <= nq; q += 2) { \
		const float* qq = Q + (size_t)q * d; \
		float* o = out + (size_t)q * rows; \
		int r = 0; \
		for (; r + 4 <= rows; r += 4) NAME##_4x2(X + (size_t)r * d, d, qq, o + r, rows); \
		for (; r < rows; r++) NAME##_1x2(X + (size_t)r * d, d, qq, o + r, rows); \
	} \
	if (q < nq) { \
		const float* qq = Q + (size_t)q * d; \
		float* o = out + (size_t)q * rows; \
		for (int r = 0; r < rows; r++) NAME##_1x1(X + (size_t)r * d, d, qq, o + r, rows); \
	} \
}
QBLOCK(i8, int8_t)
QBLOCK(bf16, uint16_t)

// code_rows_i8 scores the int8 rows named by ids (the gather form of the
// batch-1 scan, for graph builds) through i8_1x1, so a row's score equals
// the scan's bit for bit. Each row's cache lines are asked for CODE_AHEAD
// rows before it is scored: the rows are scattered over the matrix.
#define CODE_AHEAD 8
static inline void prefetch_codes(const int8_t* row, int d) {
	for (int j = 0; j < d; j += 64) _mm_prefetch((const char*)(row + j), _MM_HINT_T0);
}
static void code_rows_i8(const int8_t* X, int d, const int* ids, int n, const float* q, float* out) {
	for (int i = 0; i < n && i < CODE_AHEAD; i++) prefetch_codes(X + (size_t)ids[i] * d, d);
	for (int i = 0; i < n; i++) {
		if (i + CODE_AHEAD < n) prefetch_codes(X + (size_t)ids[i + CODE_AHEAD] * d, d);
		i8_1x1(X + (size_t)ids[i] * d, d, q, out + i, 1);
	}
}

// widen_* write n quantized values as float32 (exact conversions).
#define WIDEN(NAME, T) \
__attribute__((target("avx2,fma"))) \
static void widen_##NAME(const T* x, float* out, int n) { \
	int i = 0; \
	for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, ld8_##NAME(x + i)); \
	for (; i < n; i++) out[i] = one_##NAME(x[i]); \
}
WIDEN(i8, int8_t)
WIDEN(bf16, uint16_t)
SCAN_TOP(scan_top_i8, dot_block_i8, int8_t)
SCAN_TOP(scan_top_bf16, dot_block_bf16, uint16_t)
*/
import "C"

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		dotBlockI8, dotBlockBF16 = dotBlockI8AVX2, dotBlockBF16AVX2
		scanTopI8, scanTopBF16 = scanTopI8AVX2, scanTopBF16AVX2
		dotQImpls["avx2-fma"] = dotQImpl{dotBlockI8AVX2, dotBlockBF16AVX2, scanTopI8AVX2, scanTopBF16AVX2}
		codeRows = codeRowsAVX2
		codeRowsImpls["avx2-fma"] = codeRowsAVX2
		widenI8, widenBF16 = widenI8AVX2, widenBF16AVX2
	}
}

// dotBlockI8AVX2 is the SIMD fast path of dotBlockI8 (the slices are only
// read or written during the call).
func dotBlockI8AVX2(X []int8, rows, d int, Q []float32, nq int, out []float32) {
	if rows == 0 || nq == 0 {
		return
	}
	_, _, _ = X[rows*d-1], Q[nq*d-1], out[nq*rows-1]
	C.dot_block_i8((*C.int8_t)(unsafe.Pointer(&X[0])), C.int(rows), C.int(d),
		(*C.float)(unsafe.Pointer(&Q[0])), C.int(nq), (*C.float)(unsafe.Pointer(&out[0])))
}

// dotBlockBF16AVX2 is the SIMD fast path of dotBlockBF16.
func dotBlockBF16AVX2(X []uint16, rows, d int, Q []float32, nq int, out []float32) {
	if rows == 0 || nq == 0 {
		return
	}
	_, _, _ = X[rows*d-1], Q[nq*d-1], out[nq*rows-1]
	C.dot_block_bf16((*C.uint16_t)(unsafe.Pointer(&X[0])), C.int(rows), C.int(d),
		(*C.float)(unsafe.Pointer(&Q[0])), C.int(nq), (*C.float)(unsafe.Pointer(&out[0])))
}

// codeRowsAVX2 is the SIMD fast path of codeRows (the slices are only read
// or written during the call).
func codeRowsAVX2(codes []int8, d int, ids []int32, q, out []float32) {
	if len(ids) == 0 {
		return
	}
	C.code_rows_i8((*C.int8_t)(unsafe.Pointer(&codes[0])), C.int(d), (*C.int)(unsafe.Pointer(&ids[0])), C.int(len(ids)),
		(*C.float)(unsafe.Pointer(&q[0])), (*C.float)(unsafe.Pointer(&out[0])))
}

// widenI8AVX2 and widenBF16AVX2 are the SIMD paths of widenI8/widenBF16.
func widenI8AVX2(x []int8, out []float32) {
	if len(x) == 0 {
		return
	}
	_ = out[len(x)-1]
	C.widen_i8((*C.int8_t)(unsafe.Pointer(&x[0])), (*C.float)(unsafe.Pointer(&out[0])), C.int(len(x)))
}

func widenBF16AVX2(x []uint16, out []float32) {
	if len(x) == 0 {
		return
	}
	_ = out[len(x)-1]
	C.widen_bf16((*C.uint16_t)(unsafe.Pointer(&x[0])), (*C.float)(unsafe.Pointer(&out[0])), C.int(len(x)))
}

// scanTopI8AVX2 and scanTopBF16AVX2 are scanTop's loop over the quantized
// kernels (int8 scores times their rows' scale).
func scanTopI8AVX2(X []int8, scale []float32, rows, d int, Q []float32, nq int, base int32, s *scanState) bool {
	if rows == 0 || nq == 0 {
		return false
	}
	_, _, _ = X[rows*d-1], scale[rows-1], Q[nq*d-1]
	hits, counts, buf := s.cArgs(nq)
	return C.scan_top_i8((*C.int8_t)(unsafe.Pointer(&X[0])), (*C.float)(unsafe.Pointer(&scale[0])), C.int(rows), C.int(d),
		(*C.float)(unsafe.Pointer(&Q[0])), C.int(nq), C.int32_t(base), (*C.scan_hit)(hits), (*C.int)(counts), C.int(s.k),
		(*C.int32_t)(unsafe.Pointer(s.stop)), (*C.float)(buf)) != 0
}

func scanTopBF16AVX2(X []uint16, rows, d int, Q []float32, nq int, base int32, s *scanState) bool {
	if rows == 0 || nq == 0 {
		return false
	}
	_, _ = X[rows*d-1], Q[nq*d-1]
	hits, counts, buf := s.cArgs(nq)
	return C.scan_top_bf16((*C.uint16_t)(unsafe.Pointer(&X[0])), nil, C.int(rows), C.int(d),
		(*C.float)(unsafe.Pointer(&Q[0])), C.int(nq), C.int32_t(base), (*C.scan_hit)(hits), (*C.int)(counts), C.int(s.k),
		(*C.int32_t)(unsafe.Pointer(s.stop)), (*C.float)(buf)) != 0
}
