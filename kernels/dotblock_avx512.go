//go:build cgo && amd64 && !purego

package kernels

/*
#cgo CFLAGS: -O3
#include <immintrin.h>
#include <stddef.h>
#include "scantop.h"
#include "hsum512.h"

// R rows x Q queries per tile, one 16-lane accumulator per (row, query),
// the same summation order in every tile shape, so a query's scores never
// depend on the batch it arrives in.
#define TILE512(R, Q) \
__attribute__((target("avx512f"))) \
static void t512_##R##x##Q(const float* x, int d, const float* q, float* out, int rows) { \
	__m512 acc[R][Q]; \
	for (int r = 0; r < R; r++) for (int c = 0; c < Q; c++) acc[r][c] = _mm512_setzero_ps(); \
	int j = 0; \
	for (; j + 16 <= d; j += 16) { \
		__m512 qv[Q]; \
		for (int c = 0; c < Q; c++) qv[c] = _mm512_loadu_ps(q + (size_t)c * d + j); \
		for (int r = 0; r < R; r++) { \
			__m512 xr = _mm512_loadu_ps(x + (size_t)r * d + j); \
			for (int c = 0; c < Q; c++) acc[r][c] = _mm512_fmadd_ps(xr, qv[c], acc[r][c]); \
		} \
	} \
	for (int r = 0; r < R; r++) for (int c = 0; c < Q; c++) { \
		float s = _mm512_reduce_add_ps(acc[r][c]); \
		for (int t = j; t < d; t++) s = __builtin_fmaf(x[(size_t)r * d + t], q[(size_t)c * d + t], s); \
		out[(size_t)c * rows + r] = s; \
	} \
}
TILE512(1, 4)

// t512_4x4 is TILE512(4, 4) with the sixteen sums taken by hsum16: the
// same scores bit for bit.
#define F32_ONE(v) (v)
TILE4x4_HSUM(t512_4x4, float, _mm512_loadu_ps, F32_ONE)
TILE512(1, 3)
TILE512(1, 2)
TILE512(1, 1)

// prefetch_row asks for a gathered row's cache lines ROWS_AHEAD rows before
// it is scored: a graph search's rows are scattered over the matrix, and
// without it each one waits on memory in turn.
#define ROWS_AHEAD 4
static inline void prefetch_row(const float* row, int d) {
	for (int j = 0; j < d; j += 16) _mm_prefetch((const char*)(row + j), _MM_HINT_T0);
}

// dot_rows_avx512 scores the rows named by ids through t512_1x1, so a row's
// score equals the scan's bit for bit.
static void dot_rows_avx512(const float* X, int d, const int* ids, int n, const float* q, float* out) {
	for (int i = 0; i < n && i < ROWS_AHEAD; i++) prefetch_row(X + (size_t)ids[i] * d, d);
	for (int i = 0; i < n; i++) {
		if (i + ROWS_AHEAD < n) prefetch_row(X + (size_t)ids[i + ROWS_AHEAD] * d, d);
		t512_1x1(X + (size_t)ids[i] * d, d, q, out + i, 1);
	}
}

// ROW_TILES_MAX_BATCH is the largest batch whose queries are scored a row
// at a time (1 × 4 tiles): a small batch's scan is bound by reading the
// matrix, and one row after another is one stream; 4 × 4 tiles read four
// rows side by side and win once the products dominate (2 × 10⁵ × 384, 2
// cores: 1 × 4 took 0.73× the 4 × 4 time at batch 4, 0.92× at 8, 1.2× at
// 16). The two give the same scores bit for bit.
#define ROW_TILES_MAX_BATCH 8

// rows512_4q scores every row of a block against four queries.
__attribute__((target("avx512f")))
static void rows512_4q(const float* X, int rows, int d, const float* qb, float* ob, int row_tiles) {
	int r = 0;
	if (!row_tiles) for (; r + 4 <= rows; r += 4) t512_4x4(X + (size_t)r * d, d, qb, ob + r, rows);
	for (; r < rows; r++) t512_1x4(X + (size_t)r * d, d, qb, ob + r, rows);
}

static void dot_block_avx512(const float* X, int rows, int d, const float* Q, int nq, float* out) {
	int q = 0;
	int row_tiles = nq <= ROW_TILES_MAX_BATCH;
	for (; q + 4 <= nq; q += 4) rows512_4q(X, rows, d, Q + (size_t)q * d, out + (size_t)q * rows, row_tiles);
	// The last one to three queries in one pass, one row at a time, not 8 ×
	// 1 tiles: a small batch's scan is a read of the matrix, and one row
	// after another is one stream the hardware prefetcher follows; eight
	// rows side by side ran 1.1–1.8× slower at d 64 to 384 (RESULTS.md,
	// "Small batches at the memory floor").
	const float* qb = Q + (size_t)q * d;
	float* ob = out + (size_t)q * rows;
	switch (nq - q) {
	case 3: for (int r = 0; r < rows; r++) t512_1x3(X + (size_t)r * d, d, qb, ob + r, rows); break;
	case 2: for (int r = 0; r < rows; r++) t512_1x2(X + (size_t)r * d, d, qb, ob + r, rows); break;
	case 1: for (int r = 0; r < rows; r++) t512_1x1(X + (size_t)r * d, d, qb, ob + r, rows); break;
	}
}
SCAN_TOP(scan_top_avx512, dot_block_avx512, float)
*/
import "C"

import (
	"os"
	"unsafe"

	"golang.org/x/sys/cpu"
)

func init() {
	// GLEANER_DOT=avx2 keeps the AVX2 kernel on AVX-512 machines (e.g. to
	// compare the two).
	if !cpu.X86.HasAVX512F {
		return
	}
	dotImpls["avx512"] = dotBlockAVX512
	scanTopImpls["avx512"] = scanTopAVX512
	dotRowsImpls["avx512"] = dotRowsAVX512
	if os.Getenv("GLEANER_DOT") != "avx2" {
		dotBlock = dotBlockAVX512
		scanTop = scanTopAVX512
		dotRows = dotRowsAVX512
		dotBlockImpl = "avx512"
	}
}

func dotBlockAVX512(X []float32, rows, d int, Q []float32, nq int, out []float32) {
	if rows == 0 || nq == 0 {
		return
	}
	_ = X[rows*d-1]
	_ = Q[nq*d-1]
	_ = out[nq*rows-1]
	C.dot_block_avx512((*C.float)(unsafe.Pointer(&X[0])), C.int(rows), C.int(d),
		(*C.float)(unsafe.Pointer(&Q[0])), C.int(nq), (*C.float)(unsafe.Pointer(&out[0])))
}

// dotRowsAVX512 is the AVX-512 fast path of dotRows.
func dotRowsAVX512(X []float32, d int, ids []int32, q, out []float32) {
	if len(ids) == 0 {
		return
	}
	C.dot_rows_avx512((*C.float)(unsafe.Pointer(&X[0])), C.int(d), (*C.int)(unsafe.Pointer(&ids[0])), C.int(len(ids)),
		(*C.float)(unsafe.Pointer(&q[0])), (*C.float)(unsafe.Pointer(&out[0])))
}

// scanTopAVX512 is scanTop's loop over dot_block_avx512.
func scanTopAVX512(X []float32, rows, d int, Q []float32, nq int, base int32, s *scanState) bool {
	if rows == 0 || nq == 0 {
		return false
	}
	_, _ = X[rows*d-1], Q[nq*d-1]
	hits, counts, buf := s.cArgs(nq)
	return C.scan_top_avx512((*C.float)(unsafe.Pointer(&X[0])), nil, C.int(rows), C.int(d), (*C.float)(unsafe.Pointer(&Q[0])), C.int(nq),
		C.int32_t(base), (*C.scan_hit)(hits), (*C.int)(counts), C.int(s.k), (*C.int32_t)(unsafe.Pointer(s.stop)), (*C.float)(buf)) != 0
}
