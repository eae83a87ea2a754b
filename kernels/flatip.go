package kernels

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// flatBlockRows is how many matrix rows one dotBlock call scores: 256 rows
// of 384 floats (384 KiB) stay in a 1 MiB L2 while every query visits them.
const flatBlockRows = 256

// FlatIP returns, for each of the nq queries in Q (row-major nq×d), the k
// rows of X (row-major n×d) with the largest inner product, best first, ties
// broken by lower row index. Rows are split into contiguous ranges, one per
// worker (workers ≤ 0 means GOMAXPROCS); each worker scores blocks of rows
// against the whole batch and keeps per-query top-k heaps, which are merged
// at the end. Where the CPU has it (scanTop), each worker's rows are one
// call to C, heaps included, with the same scores and hits: against the
// loop in Go over 256-row blocks (10⁶ × 384, 2 cores) it took 0.84× the
// time at batches 1 to 16, 0.85× at 64 and 0.93× at 256. Cancellation is
// checked between blocks.
//
// Reference loop: for each query, score every row with a float64 dot product,
// sort by (score desc, index asc), keep k.
func FlatIP(ctx context.Context, X []float32, n, d int, Q []float32, nq, k, workers int) ([][]Hit, error) {
	if err := checkFlatArgs(X, n, d, Q, nq, k); err != nil {
		return nil, err
	}
	if scanTop != nil && scanInCFits(nq, min(k, n)) {
		return flatScanWith(ctx, n, k, workers, nq, func(ctx context.Context, lo, hi, k int) ([][]Hit, error) {
			return scanInC(ctx, nq, min(k, hi-lo), func(s *scanState) bool {
				return scanTop(X[lo*d:hi*d], hi-lo, d, Q, nq, int32(lo), s)
			})
		})
	}
	score := func(start, rows int, Q []float32, nq int, out []float32) {
		dotBlock(X[start*d:(start+rows)*d], rows, d, Q, nq, out)
	}
	return flatScan(ctx, n, k, workers, Q, nq, func() blockScorer { return score })
}

// scanTop, where the CPU has it, is flatScanRange's loop in C over
// dotBlock's kernel: it scores rows [0, rows) of X (indexes base, base+1,
// …) and offers each query's heap in s every score that can enter it. It
// checks s.stop between blocks and returns true if it stopped for it. Nil
// on other CPUs.
var scanTop scanTopFunc

type scanTopFunc func(X []float32, rows, d int, Q []float32, nq int, base int32, s *scanState) bool

// scanTopImpls lists scanTop by dotImpls' names, for the tests.
var scanTopImpls = map[string]scanTopFunc{}

// scanBlockRows is SCAN_BLOCK_ROWS (scantop.h).
const scanBlockRows = 256

// scanTopMaxHits bounds the heaps a scan in C keeps (nq·k hits, 8 MiB,
// allocated up front); a batch that needs more takes flatScanRange's
// heaps, which grow with use.
const scanTopMaxHits = 1 << 20

// scanInCFits reports whether a batch of nq queries for k hits (k cut to
// the rows) is scanned in C.
func scanInCFits(nq, k int) bool {
	return nq >= 1 && k >= 1 && nq*k <= scanTopMaxHits
}

// scanState is one worker's heaps for a scan in C: query q's is
// hits[q*k : q*k+counts[q]], its root the worst kept hit (engine.TopK's
// order).
type scanState struct {
	hits   []Hit
	counts []int32
	k      int
	stop   *int32    // set to 1 when the context is done; C reads it atomically
	buf    []float32 // a block's scores
}

// cArgs checks that s holds nq queries' heaps and returns the base
// pointers the C loop takes.
func (s *scanState) cArgs(nq int) (hits, counts, buf unsafe.Pointer) {
	_, _, _ = s.hits[nq*s.k-1], s.counts[nq-1], s.buf[nq*scanBlockRows-1]
	return unsafe.Pointer(&s.hits[0]), unsafe.Pointer(&s.counts[0]), unsafe.Pointer(&s.buf[0])
}

// scanInC runs scan, one C call over a worker's rows, with fresh heaps for
// nq queries and k hits (at most the worker's rows: its heaps never hold
// more), and returns each query's hits best first. The context's
// cancellation reaches the call through s.stop.
func scanInC(ctx context.Context, nq, k int, scan func(s *scanState) bool) ([][]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := &scanState{
		hits:   make([]Hit, nq*k),
		counts: make([]int32, nq),
		k:      k,
		stop:   new(int32),
		buf:    make([]float32, nq*scanBlockRows),
	}
	defer context.AfterFunc(ctx, func() { atomic.StoreInt32(s.stop, 1) })()
	if scan(s) {
		return nil, ctx.Err()
	}
	out := make([][]Hit, nq)
	for q := range out {
		out[q] = append([]Hit(nil), s.hits[q*k:q*k+int(s.counts[q])]...)
		SortHits(out[q])
	}
	return out, nil
}

// blockScorer writes the scores of rows [start, start+rows) against the nq
// queries in Q into out[q*rows+r].
type blockScorer func(start, rows int, Q []float32, nq int, out []float32)

// flatScan is the parallel scan of FlatIP over n rows, each worker's
// blocks scored by a scorer of its own (newScorer: scratch memory is
// per worker).
func flatScan(ctx context.Context, n, k, workers int, Q []float32, nq int, newScorer func() blockScorer) ([][]Hit, error) {
	return flatScanWith(ctx, n, k, workers, nq, func(ctx context.Context, lo, hi, k int) ([][]Hit, error) {
		return flatScanRange(ctx, lo, hi, Q, nq, k, newScorer())
	})
}

// flatScanWith splits n rows into one contiguous range per worker, runs
// scanRange on each in parallel (k already cut to n) and merges each
// query's lists.
func flatScanWith(ctx context.Context, n, k, workers, nq int, scanRange func(ctx context.Context, lo, hi, k int) ([][]Hit, error)) ([][]Hit, error) {
	k = min(k, n) // more than n hits cannot exist
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, max(1, n/flatBlockRows))
	partial := make([][][]Hit, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*n/workers, (w+1)*n/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			partial[w], errs[w] = scanRange(ctx, lo, hi, k)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	out := make([][]Hit, nq)
	for q := range out {
		lists := make([][]Hit, workers)
		for w := range partial {
			lists[w] = partial[w][q]
		}
		out[q] = MergeHits(k, lists...)
	}
	return out, nil
}

// checkFlatArgs validates a scan's shapes. Rows are numbered by int32
// (Hit.Index), so n is at most MaxInt32; the sizes are compared by
// division, which cannot overflow as n·d can.
func checkFlatArgs(X []float32, n, d int, Q []float32, nq, k int) error {
	switch {
	case n < 0 || n > math.MaxInt32 || d <= 0 || nq < 0 || k < 0:
		return fmt.Errorf("kernels: FlatIP: bad shape n=%d d=%d nq=%d k=%d", n, d, nq, k)
	case n > len(X)/d:
		return fmt.Errorf("kernels: FlatIP: matrix has %d floats, want %d×%d", len(X), n, d)
	case nq > len(Q)/d:
		return fmt.Errorf("kernels: FlatIP: queries have %d floats, want %d×%d", len(Q), nq, d)
	}
	return nil
}

// flatScanRange scores rows [lo, hi) and returns each query's top k.
func flatScanRange(ctx context.Context, lo, hi int, Q []float32, nq, k int, score blockScorer) ([][]Hit, error) {
	heaps := make([]*TopK, nq)
	for q := range heaps {
		heaps[q] = NewTopK(k)
	}
	scores := make([]float32, nq*flatBlockRows)
	thr := make([]float32, nq)
	mask := make([]uint64, nq*((flatBlockRows+63)/64))
	for b, start := 0, lo; start < hi; b, start = b+1, start+flatBlockRows {
		if b%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		rows := min(flatBlockRows, hi-start)
		score(start, rows, Q, nq, scores)
		pushKept(heaps, scores, rows, int32(start), thr, mask)
	}
	out := make([][]Hit, nq)
	for q, h := range heaps {
		out[q] = h.Results()
	}
	return out, nil
}

// pushKept offers each query's heap the scores of a block that keepMask
// keeps against the heap's threshold before the block: one vector compare
// per sixteen scores instead of a branch per score.
func pushKept(heaps []*TopK, scores []float32, rows int, base int32, thr []float32, mask []uint64) {
	nan := float32(math.NaN())
	for q, h := range heaps {
		thr[q] = nan
		if th, full := h.Threshold(); full {
			thr[q] = th
		}
	}
	keepMask(scores, rows, len(heaps), thr, mask)
	words := (rows + 63) / 64
	for q, h := range heaps {
		for w, word := range mask[q*words : q*words+words] {
			for ; word != 0; word &= word - 1 {
				r := w*64 + bits.TrailingZeros64(word)
				h.Push(base+int32(r), scores[q*rows+r])
			}
		}
	}
}

// pushBlock offers a block of scores (TopKRows' rows), skipping those below
// the heap's threshold without touching the heap. The threshold is kept in
// a local and read again only after a push, the one thing that can raise it.
func pushBlock(h *TopK, s []float32, base int32) {
	th, full := h.Threshold()
	for i, v := range s {
		if full && v <= th {
			continue
		}
		h.Push(base+int32(i), v)
		th, full = h.Threshold()
	}
}

// ScoreAll writes the inner product of q with every row of X (n×d) into
// out (n values), in parallel over row blocks, with the same arithmetic as
// FlatIP. Each core's rows are one dotBlock call: at batch 1 a row's score
// does not depend on the block it is in, and a return to Go after every
// block cost the scan 5–15 % (scan_top's note in scantop.h).
func ScoreAll(X []float32, n, d int, q []float32, out []float32) error {
	if err := checkFlatArgs(X, n, d, q, 1, 0); err != nil {
		return err
	}
	if len(out) < n {
		return fmt.Errorf("kernels: ScoreAll: output has %d slots for %d rows", len(out), n)
	}
	blocks := (n + flatBlockRows - 1) / flatBlockRows
	parallelRows(blocks, flatBlockRows*d, func(lo, hi int) {
		start, end := lo*flatBlockRows, min(hi*flatBlockRows, n)
		dotBlock(X[start*d:end*d], end-start, d, q, 1, out[start:end])
	})
	return nil
}
