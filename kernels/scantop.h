// scantop.h: a flat scan's loop in C for small batches (cgo compiles each
// file's preamble apart, so the dot kernels' files include it and pass it
// their block scorer).
#ifndef GLEANER_SCANTOP_H
#define GLEANER_SCANTOP_H
#include <stddef.h>
#include <stdint.h>

// The scan skips NaN scores by v != v and relies on IEEE compares;
// -ffast-math would let the compiler drop both.
#ifdef __FAST_MATH__
#error "scantop.h needs IEEE float semantics: build without -ffast-math / -Ofast"
#endif

// scan_hit is engine.Hit's layout: int32 index, then float32 score.
typedef struct { int32_t index; float score; } scan_hit;

// scan_block_scorer is a dot_block kernel (float32, int8 or bf16 rows).
typedef void (*scan_block_scorer)(const void* X, int rows, int d, const float* Q, int nq, float* out);

// SCAN_BLOCK_ROWS is scanBlockRows (flatip.go): rows scored into buf at a
// time.
#define SCAN_BLOCK_ROWS 256

// scan_worse is engine.TopK's heap order: the lower score, then the
// higher index, is worse.
static inline int scan_worse(scan_hit a, scan_hit b) {
	return a.score < b.score || (a.score == b.score && a.index > b.index);
}

// scan_offer adds x to a heap of at most k hits whose root is the worst,
// replacing the root when the heap is full. The caller has checked that x
// beats the root (rows arrive in ascending index, so a tie never does).
static void scan_offer(scan_hit* h, int* n, int k, scan_hit x) {
	int i;
	if (*n < k) {
		i = (*n)++;
		h[i] = x;
		while (i > 0) {
			int p = (i - 1) / 2;
			if (!scan_worse(h[i], h[p])) break;
			scan_hit t = h[i]; h[i] = h[p]; h[p] = t;
			i = p;
		}
		return;
	}
	h[0] = x;
	for (i = 0;;) {
		int l = 2 * i + 1, m = i;
		if (l < k && scan_worse(h[l], h[m])) m = l;
		if (l + 1 < k && scan_worse(h[l + 1], h[m])) m = l + 1;
		if (m == i) return;
		scan_hit t = h[i]; h[i] = h[m]; h[m] = t;
		i = m;
	}
}

// SCAN_GROUP scores are checked against a full heap's worst at once
// (scan_any_above), so most are passed over without a branch each.
#define SCAN_GROUP 16

// scan_any_above reports whether any of SCAN_GROUP scores is above worst
// (NaN is not, and never enters a heap). A loop without branches, so the
// compiler vectorizes it.
static inline int scan_any_above(const float* s, float worst) {
	int any = 0;
	for (int j = 0; j < SCAN_GROUP; j++) any |= s[j] > worst;
	return any;
}

// scan_top scores rows [0, rows) of X (row_bytes each; indexes base,
// base+1, …) against nq queries, a block of SCAN_BLOCK_ROWS rows at a time
// into buf (nq × SCAN_BLOCK_ROWS floats), multiplies row r's scores by
// scale[r] when scale is not NULL (int8 rows; the same float product as
// scaleRows), and offers each query's heap (heaps + q*k, counts[q] kept)
// the scores that beat its worst: NaN never, anything while it is not full.
// It stops after the block in which *stop turns nonzero (the caller's
// context was cancelled) and returns 1, else 0.
//
// One call covers a worker's whole range: returning to Go after every
// block, or even once a millisecond, made the scan 5–15 % slower, more in
// its spread than its best case (RESULTS.md, "Flat search in one call per
// core").
static int scan_top(scan_block_scorer score, const void* X, size_t row_bytes, const float* scale, int rows, int d,
		const float* Q, int nq, int32_t base, scan_hit* heaps, int* counts, int k, const int32_t* stop, float* buf) {
	// int64_t: s0 += SCAN_BLOCK_ROWS would overflow an int past 2³¹ − 256 rows.
	for (int64_t s0 = 0; s0 < rows; s0 += SCAN_BLOCK_ROWS) {
		if (__atomic_load_n(stop, __ATOMIC_RELAXED)) return 1;
		int m = rows - s0 < SCAN_BLOCK_ROWS ? (int)(rows - s0) : SCAN_BLOCK_ROWS;
		score((const char*)X + (size_t)s0 * row_bytes, m, d, Q, nq, buf);
		for (int q = 0; q < nq; q++) {
			scan_hit* h = heaps + (size_t)q * k;
			int* n = counts + q;
			float* s = buf + (size_t)q * m;
			if (scale) for (int r = 0; r < m; r++) s[r] *= scale[s0 + r];
			int full = *n >= k;
			float worst = full ? h[0].score : 0;
			for (int r0 = 0; r0 < m; r0 += SCAN_GROUP) {
				int end = r0 + SCAN_GROUP < m ? r0 + SCAN_GROUP : m;
				if (full && end - r0 == SCAN_GROUP && !scan_any_above(s + r0, worst)) continue;
				for (int r = r0; r < end; r++) {
					float v = s[r];
					if (v != v || (full && !(v > worst))) continue;
					scan_hit x = { (int32_t)(base + s0 + r), v }; // < n ≤ 2³¹ − 1 (checked in Go)
					scan_offer(h, n, k, x);
					full = *n >= k;
					worst = h[0].score;
				}
			}
		}
	}
	return 0;
}

// SCAN_TOP defines NAME, scan_top over the block kernel BLOCK of rows of
// type T (a wrapper, so the kernel keeps its typed signature).
#define SCAN_TOP(NAME, BLOCK, T) \
static void NAME##_score(const void* X, int rows, int d, const float* Q, int nq, float* out) { \
	BLOCK((const T*)X, rows, d, Q, nq, out); \
} \
static int NAME(const T* X, const float* scale, int rows, int d, const float* Q, int nq, int32_t base, \
		scan_hit* heaps, int* counts, int k, const int32_t* stop, float* buf) { \
	return scan_top(NAME##_score, X, (size_t)d * sizeof(T), scale, rows, d, Q, nq, base, heaps, counts, k, stop, buf); \
}
#endif
