//go:build cgo && amd64 && !purego

package kernels

/*
#cgo CFLAGS: -O3
// GCC turned the tiles' zeroing of their accumulator arrays into memsets
// (rep stos) on arrays the registers then replace: a fifth of the 4 × 3
// tile's time in a profile of batch 256.
#pragma GCC optimize("no-tree-loop-distribute-patterns")
#include <immintrin.h>
#include <stddef.h>
#include "scantop.h"

__attribute__((target("avx2,fma")))
static inline float hsum256(__m256 v) {
	__m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
	lo = _mm_add_ps(lo, hi);
	lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
	lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
	return _mm_cvtss_f32(lo);
}

// In every tile (and the quantized ones) the dimensions past the last full
// vector are summed by explicit fused multiply-adds: left as s += x*q, GCC
// vectorizes the products of some tiles and not others, rounding them
// apart, and a query's scores would change with the tile shape.
//
// tile of R rows x 2 queries (R = 1: small batches score a row at a time;
// larger ones take the 4 × 3 tiles below, and their last pair this).
#define TILE(R) \
__attribute__((target("avx2,fma"))) \
static void tile##R##x2(const float* x, int d, const float* q0, const float* q1, float* o0, float* o1) { \
	__m256 a0[R], a1[R]; \
	for (int r = 0; r < R; r++) { a0[r] = _mm256_setzero_ps(); a1[r] = _mm256_setzero_ps(); } \
	int j = 0; \
	for (; j + 8 <= d; j += 8) { \
		__m256 v0 = _mm256_loadu_ps(q0 + j), v1 = _mm256_loadu_ps(q1 + j); \
		for (int r = 0; r < R; r++) { \
			__m256 xr = _mm256_loadu_ps(x + (size_t)r * d + j); \
			a0[r] = _mm256_fmadd_ps(xr, v0, a0[r]); \
			a1[r] = _mm256_fmadd_ps(xr, v1, a1[r]); \
		} \
	} \
	for (int r = 0; r < R; r++) { \
		float s0 = hsum256(a0[r]), s1 = hsum256(a1[r]); \
		for (int t = j; t < d; t++) { s0 = __builtin_fmaf(x[(size_t)r * d + t], q0[t], s0); s1 = __builtin_fmaf(x[(size_t)r * d + t], q1[t], s1); } \
		o0[r] = s0; o1[r] = s1; \
	} \
}
TILE(1)

// tile of R rows x 3 queries, for batches over ROW_TILES_MAX_BATCH_AVX2:
// 12 accumulators, each row vector loaded once for three queries. Each
// (row, query) keeps its own 8-lane accumulator, so the scores equal the
// other tiles' bit for bit.
#define TILE3(R) \
__attribute__((target("avx2,fma"))) \
static void tile##R##x3(const float* x, int d, const float* q0, const float* q1, const float* q2, float* o0, float* o1, float* o2) { \
	__m256 a0[R], a1[R], a2[R]; \
	for (int r = 0; r < R; r++) { a0[r] = _mm256_setzero_ps(); a1[r] = _mm256_setzero_ps(); a2[r] = _mm256_setzero_ps(); } \
	int j = 0; \
	for (; j + 8 <= d; j += 8) { \
		__m256 v0 = _mm256_loadu_ps(q0 + j), v1 = _mm256_loadu_ps(q1 + j), v2 = _mm256_loadu_ps(q2 + j); \
		for (int r = 0; r < R; r++) { \
			__m256 xr = _mm256_loadu_ps(x + (size_t)r * d + j); \
			a0[r] = _mm256_fmadd_ps(xr, v0, a0[r]); \
			a1[r] = _mm256_fmadd_ps(xr, v1, a1[r]); \
			a2[r] = _mm256_fmadd_ps(xr, v2, a2[r]); \
		} \
	} \
	for (int r = 0; r < R; r++) { \
		float s0 = hsum256(a0[r]), s1 = hsum256(a1[r]), s2 = hsum256(a2[r]); \
		for (int t = j; t < d; t++) { \
			float xv = x[(size_t)r * d + t]; \
			s0 = __builtin_fmaf(xv, q0[t], s0); s1 = __builtin_fmaf(xv, q1[t], s1); s2 = __builtin_fmaf(xv, q2[t], s2); \
		} \
		o0[r] = s0; o1[r] = s1; o2[r] = s2; \
	} \
}
TILE3(4)
TILE3(1)

// tile of R rows x 1 query, for batch 1 and the odd last query. It sums in
// exactly the order of the x2 tiles (one 8-lane accumulator per row and
// query), so a query's scores never depend on the batch it arrives in.
#define TILE1(R) \
__attribute__((target("avx2,fma"))) \
static void tile##R##x1(const float* x, int d, const float* q0, float* o0) { \
	__m256 a0[R]; \
	for (int r = 0; r < R; r++) a0[r] = _mm256_setzero_ps(); \
	int j = 0; \
	for (; j + 8 <= d; j += 8) { \
		__m256 v0 = _mm256_loadu_ps(q0 + j); \
		for (int r = 0; r < R; r++) a0[r] = _mm256_fmadd_ps(_mm256_loadu_ps(x + (size_t)r * d + j), v0, a0[r]); \
	} \
	for (int r = 0; r < R; r++) { \
		float s0 = hsum256(a0[r]); \
		for (int t = j; t < d; t++) s0 = __builtin_fmaf(x[(size_t)r * d + t], q0[t], s0); \
		o0[r] = s0; \
	} \
}
TILE1(1)

// prefetch_row asks for a gathered row's cache lines ROWS_AHEAD rows before
// it is scored: a graph search's rows are scattered over the matrix, and
// without it each one waits on memory in turn.
#define ROWS_AHEAD 4
static inline void prefetch_row(const float* row, int d) {
	for (int j = 0; j < d; j += 16) _mm_prefetch((const char*)(row + j), _MM_HINT_T0);
}

// dot_rows_avx2 scores the rows named by ids (the gather form of the batch-1
// scan, for graph search): each row through tile1x1, so a row's score equals
// the scan's bit for bit.
static void dot_rows_avx2(const float* X, int d, const int* ids, int n, const float* q, float* out) {
	for (int i = 0; i < n && i < ROWS_AHEAD; i++) prefetch_row(X + (size_t)ids[i] * d, d);
	for (int i = 0; i < n; i++) {
		if (i + ROWS_AHEAD < n) prefetch_row(X + (size_t)ids[i + ROWS_AHEAD] * d, d);
		tile1x1(X + (size_t)ids[i] * d, d, q, out + i);
	}
}

// ROW_TILES_MAX_BATCH_AVX2 is the largest batch whose query pairs are
// scored a row at a time (1 × 2 tiles), as ROW_TILES_MAX_BATCH in the
// AVX-512 kernel: on the dev machine (AVX-512 hardware running this code,
// 2 × 10⁵ × 384, 2 cores) they took 0.75–0.9× the 4 × 2 tiles' time at
// batch 4, the same at 8, 1.2× at 16 (4 × 3 tiles have since replaced
// those). All give the same scores.
#define ROW_TILES_MAX_BATCH_AVX2 4

// L1_CHUNK_BYTES bounds the rows a batch's query triples sweep in turn: a
// 256-row block of 384 floats (384 KiB) sits in L2, a chunk of 16 of its
// rows in a 32 KiB L1 while every triple visits it. On a Zen 3 VM
// (BenchmarkFlatIP, 2 × 10⁵ × 384) the chunks took batch 32 from 62–85 to
// 88–98 GFLOP/s and batch 256 from 85–124 to 128–140. Each (row, query)
// score is still one tile's sum, so the chunking changes no score.
#define L1_CHUNK_BYTES (24 * 1024)

// dot_triples_avx2 scores rows [r0, r1) against query triples [qa, qb) in
// 4 × 3 tiles (the rows past a multiple of 4 in 1 × 3 tiles).
__attribute__((target("avx2,fma")))
static void dot_triples_avx2(const float* X, int rows, int r0, int r1, int d, const float* Q, int qa, int qb, float* out) {
	for (int q = qa; q < qb; q += 3) {
		const float *q0 = Q + (size_t)q * d, *q1 = q0 + d, *q2 = q1 + d;
		float *o0 = out + (size_t)q * rows, *o1 = o0 + rows, *o2 = o1 + rows;
		int r = r0;
		for (; r + 4 <= r1; r += 4) tile4x3(X + (size_t)r * d, d, q0, q1, q2, o0 + r, o1 + r, o2 + r);
		for (; r < r1; r++) tile1x3(X + (size_t)r * d, d, q0, q1, q2, o0 + r, o1 + r, o2 + r);
	}
}

static void dot_block_avx2(const float* X, int rows, int d, const float* Q, int nq, float* out) {
	int q = 0;
	int row_tiles = nq <= ROW_TILES_MAX_BATCH_AVX2;
	if (!row_tiles) {
		int triples = nq / 3 * 3, chunk = L1_CHUNK_BYTES / (4 * d) / 4 * 4;
		if (chunk < 4) chunk = 4;
		for (int r = 0; r < rows; r += chunk) dot_triples_avx2(X, rows, r, r + chunk < rows ? r + chunk : rows, d, Q, 0, triples, out);
		q = triples;
	}
	for (; q + 2 <= nq; q += 2) {
		const float *q0 = Q + (size_t)q * d, *q1 = q0 + d;
		float *o0 = out + (size_t)q * rows, *o1 = o0 + rows;
		for (int r = 0; r < rows; r++) tile1x2(X + (size_t)r * d, d, q0, q1, o0 + r, o1 + r);
	}
	if (q < nq) {
		const float *q0 = Q + (size_t)q * d;
		float *o0 = out + (size_t)q * rows;
		for (int r = 0; r < rows; r++) tile1x1(X + (size_t)r * d, d, q0, o0 + r);
	}
}
SCAN_TOP(scan_top_avx2, dot_block_avx2, float)
*/
import "C"

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		dotBlock = dotBlockAVX2
		dotBlockImpl = "avx2-fma"
		dotImpls["avx2-fma"] = dotBlockAVX2
		dotRows = dotRowsAVX2
		dotRowsImpls["avx2-fma"] = dotRowsAVX2
		scanTop = scanTopAVX2
		scanTopImpls["avx2-fma"] = scanTopAVX2
	}
}

// dotBlockAVX2 is the SIMD fast path of dotBlock. The slices are only read
// or written during the call, so passing their base pointers is safe.
func dotBlockAVX2(X []float32, rows, d int, Q []float32, nq int, out []float32) {
	if rows == 0 || nq == 0 {
		return
	}
	_ = X[rows*d-1]
	_ = Q[nq*d-1]
	_ = out[nq*rows-1]
	C.dot_block_avx2((*C.float)(unsafe.Pointer(&X[0])), C.int(rows), C.int(d),
		(*C.float)(unsafe.Pointer(&Q[0])), C.int(nq), (*C.float)(unsafe.Pointer(&out[0])))
}

// dotRowsAVX2 is the SIMD fast path of dotRows (the slices are only read or
// written during the call).
func dotRowsAVX2(X []float32, d int, ids []int32, q, out []float32) {
	if len(ids) == 0 {
		return
	}
	C.dot_rows_avx2((*C.float)(unsafe.Pointer(&X[0])), C.int(d), (*C.int)(unsafe.Pointer(&ids[0])), C.int(len(ids)),
		(*C.float)(unsafe.Pointer(&q[0])), (*C.float)(unsafe.Pointer(&out[0])))
}

// scanTopAVX2 is scanTop's loop over dot_block_avx2.
func scanTopAVX2(X []float32, rows, d int, Q []float32, nq int, base int32, s *scanState) bool {
	if rows == 0 || nq == 0 {
		return false
	}
	_, _ = X[rows*d-1], Q[nq*d-1]
	hits, counts, buf := s.cArgs(nq)
	return C.scan_top_avx2((*C.float)(unsafe.Pointer(&X[0])), nil, C.int(rows), C.int(d), (*C.float)(unsafe.Pointer(&Q[0])), C.int(nq),
		C.int32_t(base), (*C.scan_hit)(hits), (*C.int)(counts), C.int(s.k), (*C.int32_t)(unsafe.Pointer(s.stop)), (*C.float)(buf)) != 0
}
