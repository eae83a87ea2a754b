//go:build cgo && amd64 && !purego

package kernels

/*
#cgo CFLAGS: -O3
#include <immintrin.h>
#include <stddef.h>
#include "scantop.h"
#include <stdint.h>
#include "hsum512.h"

// Sixteen quantized values as float32 lanes (see dotblockq_avx2.go).
__attribute__((target("avx512f")))
static inline __m512 ld16_i8(const int8_t* p) {
	return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)p)));
}
__attribute__((target("avx512f")))
static inline __m512 ld16_bf16(const uint16_t* p) {
	return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)p)), 16));
}
static inline float one512_i8(int8_t v) { return (float)v; }
static inline float one512_bf16(uint16_t v) { union { uint32_t u; float f; } c; c.u = (uint32_t)v << 16; return c.f; }

// tile of R rows x Q queries, one 16-lane accumulator per (row, query) and
// the same summation in every shape; each row's lanes are converted once
// per tile and reused for its Q queries.
#define QTILE512(NAME, T, R, Q) \
__attribute__((target("avx512f"))) \
static void q512_##NAME##_##R##x##Q(const T* x, int d, const float* q, float* out, int rows) { \
	__m512 acc[R][Q]; \
	for (int r = 0; r < R; r++) for (int c = 0; c < Q; c++) acc[r][c] = _mm512_setzero_ps(); \
	int j = 0; \
	for (; j + 16 <= d; j += 16) { \
		__m512 qv[Q]; \
		for (int c = 0; c < Q; c++) qv[c] = _mm512_loadu_ps(q + (size_t)c * d + j); \
		for (int r = 0; r < R; r++) { \
			__m512 xr = ld16_##NAME(x + (size_t)r * d + j); \
			for (int c = 0; c < Q; c++) acc[r][c] = _mm512_fmadd_ps(xr, qv[c], acc[r][c]); \
		} \
	} \
	for (int r = 0; r < R; r++) for (int c = 0; c < Q; c++) { \
		float s = _mm512_reduce_add_ps(acc[r][c]); \
		for (int t = j; t < d; t++) s = __builtin_fmaf(one512_##NAME(x[(size_t)r * d + t]), q[(size_t)c * d + t], s); \
		out[(size_t)c * rows + r] = s; \
	} \
}

// The last one to three queries of a batch are scored in one pass, a row
// at a time, as in dot_block_avx512.
//
// QROW_TILES_MAX_BATCH is the largest batch scored a row at a time (1 × 4
// tiles), as ROW_TILES_MAX_BATCH for float32 (dotblock_avx512.go): at batch
// 4 they took 0.65× (bf16) and 0.9× (int8) the 4 × 4 tiles' time, at 8
// 0.88× and 1.08×, at 16 1.18× and 1.35× (2 × 10⁵ × 384, 2 cores).
#define QROW_TILES_MAX_BATCH 4

#define QBLOCK512(NAME, T) \
TILE4x4_HSUM(q512_##NAME##_4x4, T, ld16_##NAME, one512_##NAME) QTILE512(NAME, T, 1, 4) QTILE512(NAME, T, 1, 3) QTILE512(NAME, T, 1, 2) QTILE512(NAME, T, 1, 1) \
__attribute__((target("avx512f"))) \
static void dot_block512_##NAME(const T* X, int rows, int d, const float* Q, int nq, float* out) { \
	int q = 0; \
	for (; q + 4 <= nq; q += 4) { \
		const float* qq = Q + (size_t)q * d; \
		float* o = out + (size_t)q * rows; \
		int r = 0; \
		if (nq > QROW_TILES_MAX_BATCH) for (; r + 4 <= rows; r += 4) q512_##NAME##_4x4(X + (size_t)r * d, d, qq, o + r, rows); \
		for (; r < rows; r++) q512_##NAME##_1x4(X + (size_t)r * d, d, qq, o + r, rows); \
	} \
	const float* qq = Q + (size_t)q * d; \
	float* o = out + (size_t)q * rows; \
	switch (nq - q) { \
	case 3: for (int r = 0; r < rows; r++) q512_##NAME##_1x3(X + (size_t)r * d, d, qq, o + r, rows); break; \
	case 2: for (int r = 0; r < rows; r++) q512_##NAME##_1x2(X + (size_t)r * d, d, qq, o + r, rows); break; \
	case 1: for (int r = 0; r < rows; r++) q512_##NAME##_1x1(X + (size_t)r * d, d, qq, o + r, rows); break; \
	} \
}
QBLOCK512(i8, int8_t)
QBLOCK512(bf16, uint16_t)

// code_rows512_i8 is code_rows_i8 (dotblockq_avx2.go) through q512_i8_1x1.
#define CODE_AHEAD512 8
static inline void prefetch_codes512(const int8_t* row, int d) {
	for (int j = 0; j < d; j += 64) _mm_prefetch((const char*)(row + j), _MM_HINT_T0);
}
static void code_rows512_i8(const int8_t* X, int d, const int* ids, int n, const float* q, float* out) {
	for (int i = 0; i < n && i < CODE_AHEAD512; i++) prefetch_codes512(X + (size_t)ids[i] * d, d);
	for (int i = 0; i < n; i++) {
		if (i + CODE_AHEAD512 < n) prefetch_codes512(X + (size_t)ids[i + CODE_AHEAD512] * d, d);
		q512_i8_1x1(X + (size_t)ids[i] * d, d, q, out + i, 1);
	}
}
SCAN_TOP(scan_top512_i8, dot_block512_i8, int8_t)
SCAN_TOP(scan_top512_bf16, dot_block512_bf16, uint16_t)
*/
import "C"

import (
	"os"
	"unsafe"

	"golang.org/x/sys/cpu"
)

func init() {
	if !cpu.X86.HasAVX512F {
		return
	}
	dotQImpls["avx512"] = dotQImpl{dotBlockI8AVX512, dotBlockBF16AVX512, scanTopI8AVX512, scanTopBF16AVX512}
	codeRowsImpls["avx512"] = codeRowsAVX512
	if os.Getenv("GLEANER_DOT") != "avx2" { // as dotBlock's choice
		dotBlockI8, dotBlockBF16 = dotBlockI8AVX512, dotBlockBF16AVX512
		scanTopI8, scanTopBF16 = scanTopI8AVX512, scanTopBF16AVX512
		codeRows = codeRowsAVX512
	}
}

// dotBlockI8AVX512 is the AVX-512 fast path of dotBlockI8 (the slices are
// only read or written during the call).
func dotBlockI8AVX512(X []int8, rows, d int, Q []float32, nq int, out []float32) {
	if rows == 0 || nq == 0 {
		return
	}
	_, _, _ = X[rows*d-1], Q[nq*d-1], out[nq*rows-1]
	C.dot_block512_i8((*C.int8_t)(unsafe.Pointer(&X[0])), C.int(rows), C.int(d),
		(*C.float)(unsafe.Pointer(&Q[0])), C.int(nq), (*C.float)(unsafe.Pointer(&out[0])))
}

// codeRowsAVX512 is the AVX-512 fast path of codeRows.
func codeRowsAVX512(codes []int8, d int, ids []int32, q, out []float32) {
	if len(ids) == 0 {
		return
	}
	C.code_rows512_i8((*C.int8_t)(unsafe.Pointer(&codes[0])), C.int(d), (*C.int)(unsafe.Pointer(&ids[0])), C.int(len(ids)),
		(*C.float)(unsafe.Pointer(&q[0])), (*C.float)(unsafe.Pointer(&out[0])))
}

// dotBlockBF16AVX512 is the AVX-512 fast path of dotBlockBF16.
func dotBlockBF16AVX512(X []uint16, rows, d int, Q []float32, nq int, out []float32) {
	if rows == 0 || nq == 0 {
		return
	}
	_, _, _ = X[rows*d-1], Q[nq*d-1], out[nq*rows-1]
	C.dot_block512_bf16((*C.uint16_t)(unsafe.Pointer(&X[0])), C.int(rows), C.int(d),
		(*C.float)(unsafe.Pointer(&Q[0])), C.int(nq), (*C.float)(unsafe.Pointer(&out[0])))
}

// scanTopI8AVX512 and scanTopBF16AVX512 are scanTop's loop over the quantized
// kernels (int8 scores times their rows' scale).
func scanTopI8AVX512(X []int8, scale []float32, rows, d int, Q []float32, nq int, base int32, s *scanState) bool {
	if rows == 0 || nq == 0 {
		return false
	}
	_, _, _ = X[rows*d-1], scale[rows-1], Q[nq*d-1]
	hits, counts, buf := s.cArgs(nq)
	return C.scan_top512_i8((*C.int8_t)(unsafe.Pointer(&X[0])), (*C.float)(unsafe.Pointer(&scale[0])), C.int(rows), C.int(d),
		(*C.float)(unsafe.Pointer(&Q[0])), C.int(nq), C.int32_t(base), (*C.scan_hit)(hits), (*C.int)(counts), C.int(s.k),
		(*C.int32_t)(unsafe.Pointer(s.stop)), (*C.float)(buf)) != 0
}

func scanTopBF16AVX512(X []uint16, rows, d int, Q []float32, nq int, base int32, s *scanState) bool {
	if rows == 0 || nq == 0 {
		return false
	}
	_, _ = X[rows*d-1], Q[nq*d-1]
	hits, counts, buf := s.cArgs(nq)
	return C.scan_top512_bf16((*C.uint16_t)(unsafe.Pointer(&X[0])), nil, C.int(rows), C.int(d),
		(*C.float)(unsafe.Pointer(&Q[0])), C.int(nq), C.int32_t(base), (*C.scan_hit)(hits), (*C.int)(counts), C.int(s.k),
		(*C.int32_t)(unsafe.Pointer(s.stop)), (*C.float)(buf)) != 0
}
