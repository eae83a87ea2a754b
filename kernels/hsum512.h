// hsum512.h: the horizontal sums of the AVX-512 dot tiles (cgo compiles each
// file's preamble apart, so shared inline helpers live in a header).
#ifndef GLEANER_HSUM512_H
#define GLEANER_HSUM512_H
#include <immintrin.h>
#include <stddef.h>

// hsum16 sums sixteen accumulators at once: lane 4c+r of the result is
// _mm512_reduce_add_ps(a[4r+c]) bit for bit whenever that is not NaN (a
// NaN's payload may differ: x86 keeps the first operand's; no caller ranks
// a NaN). It adds in reduce_add's tree (lane i with i+8, then i+4, i+2,
// i+1; float addition of non-NaN values commutes exactly),
// so a 4×4 tile's scores equal the 1×n tiles' and a query's scores
// stay independent of its batch. 15 adds and 30 shuffles replace the 16
// separate reductions (about 110 instructions, and the spills they forced).
__attribute__((target("avx512f")))
static inline __attribute__((always_inline)) __m512 hsum16(const __m512 a[16]) {
	__m512 b[8], c[4], e[2];
	for (int k = 0; k < 8; k++) { // i + i+8: b[k] holds a[2k]'s 8 sums, then a[2k+1]'s
		__m512 lo = _mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0x44);
		__m512 hi = _mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0xEE);
		b[k] = _mm512_add_ps(lo, hi);
	}
	for (int k = 0; k < 4; k++) { // i + i+4: 128-bit lane m of c[k] holds a[4k+m]'s 4 sums
		__m512 x = _mm512_shuffle_f32x4(b[2 * k], b[2 * k + 1], 0x88);
		__m512 y = _mm512_shuffle_f32x4(b[2 * k], b[2 * k + 1], 0xDD);
		c[k] = _mm512_add_ps(x, y);
	}
	for (int k = 0; k < 2; k++) { // i + i+2, within each 128-bit lane
		__m512 x = _mm512_shuffle_ps(c[2 * k], c[2 * k + 1], 0x44);
		__m512 y = _mm512_shuffle_ps(c[2 * k], c[2 * k + 1], 0xEE);
		e[k] = _mm512_add_ps(x, y);
	}
	__m512 x = _mm512_shuffle_ps(e[0], e[1], 0x88); // i + i+1
	__m512 y = _mm512_shuffle_ps(e[0], e[1], 0xDD);
	return _mm512_add_ps(x, y);
}

// store4x4 writes hsum16's 4×4 scores: query c's four rows to out[c*rows:].
__attribute__((target("avx512f")))
static inline __attribute__((always_inline)) void store4x4(__m512 s, float* out, int rows) {
	_mm_storeu_ps(out, _mm512_castps512_ps128(s));
	_mm_storeu_ps(out + (size_t)rows, _mm512_extractf32x4_ps(s, 1));
	_mm_storeu_ps(out + (size_t)2 * rows, _mm512_extractf32x4_ps(s, 2));
	_mm_storeu_ps(out + (size_t)3 * rows, _mm512_extractf32x4_ps(s, 3));
}

// TILE4x4_HSUM defines FN, the 4 rows × 4 queries tile over rows of T (LOAD
// widens sixteen of them to float32 lanes, ONE a single one): one 16-lane
// accumulator per (row, query) in TILE512's order, the sixteen sums taken by
// hsum16 and the tail past the last 16 lanes added after them, as TILE512
// adds it. Inlined into its row loop, its accumulators never leave
// registers. The float32 and the quantized scans both use it.
#define TILE4x4_HSUM(FN, T, LOAD, ONE) \
__attribute__((target("avx512f"))) \
static inline __attribute__((always_inline)) void FN(const T* x, int d, const float* q, float* out, int rows) { \
	__m512 a[16]; \
	for (int i = 0; i < 16; i++) a[i] = _mm512_setzero_ps(); \
	int j = 0; \
	for (; j + 16 <= d; j += 16) { \
		__m512 qv[4]; \
		for (int c = 0; c < 4; c++) qv[c] = _mm512_loadu_ps(q + (size_t)c * d + j); \
		for (int r = 0; r < 4; r++) { \
			__m512 xr = LOAD(x + (size_t)r * d + j); \
			for (int c = 0; c < 4; c++) a[4 * r + c] = _mm512_fmadd_ps(xr, qv[c], a[4 * r + c]); \
		} \
	} \
	store4x4(hsum16(a), out, rows); \
	for (int r = 0; j < d && r < 4; r++) for (int c = 0; c < 4; c++) { \
		float s = out[(size_t)c * rows + r]; \
		for (int t = j; t < d; t++) s = __builtin_fmaf(ONE(x[(size_t)r * d + t]), q[(size_t)c * d + t], s); \
		out[(size_t)c * rows + r] = s; \
	} \
}

#endif
