package engine

import (
	"fmt"
	"math"
)

// The index checks every backend makes on the host before a sparse or
// gather op runs (the cuda backend reads them from its host mirror of
// the index buffer, downloading only what a kernel wrote): one
// place, so the cpu kernels, cuda and its emulation refuse the same
// inputs with the same words.

// CheckEdges checks edges grouped by destination: n+1 non-decreasing
// pointers from 0, and every source in 0..n−1. It returns the edge count.
func CheckEdges(op string, n int, ptr []int64, src []int32) (int, error) {
	if n < 0 || len(ptr) != n+1 || ptr[0] != 0 {
		return 0, fmt.Errorf("%s: want %d pointers starting at 0, have %d", op, n+1, len(ptr))
	}
	for i := 0; i < n; i++ {
		if ptr[i] > ptr[i+1] {
			return 0, fmt.Errorf("%s: pointers decrease at node %d", op, i)
		}
	}
	nnz := int(ptr[n])
	if len(src) < nnz {
		return 0, fmt.Errorf("%s: %d sources for %d edges", op, len(src), nnz)
	}
	for p, s := range src[:nnz] {
		if s < 0 || int(s) >= n {
			return 0, fmt.Errorf("%s: edge %d has source %d outside %d nodes", op, p, s, n)
		}
	}
	return nnz, nil
}

// CheckFeatureRows checks the nnz edges' feature rows: each in 0..rows−1,
// or, with beyond set, any row ≥ 0 (rows past the table carry nothing, as
// in EdgeMessage).
func CheckFeatureRows(op string, erow []int32, nnz, rows int, beyond bool) error {
	if len(erow) < nnz {
		return fmt.Errorf("%s: %d feature rows for %d edges", op, len(erow), nnz)
	}
	for p, r := range erow[:nnz] {
		if r < 0 || (!beyond && int(r) >= rows) {
			return fmt.Errorf("%s: edge %d uses feature row %d outside a table of %d rows", op, p, r, rows)
		}
	}
	return nil
}

// CheckCopyRows checks a CopyRows op's n moves of cols values against the
// rows X and Out hold, given its indices as host slices (nil: the
// identity): every source below xRows (negative: a zero row), every
// destination inside Out and written once.
func CheckCopyRows(n, cols int, src, dst []int32, xRows, outRows int) error {
	if n < 0 || cols <= 0 || (src != nil && len(src) < n) || (dst != nil && len(dst) < n) {
		return fmt.Errorf("copy rows: bad shape N=%d Cols=%d with %d sources and %d destinations", n, cols, len(src), len(dst))
	}
	var seen map[int32]struct{}
	if dst != nil {
		seen = make(map[int32]struct{}, n)
	}
	for i := 0; i < n; i++ {
		s, d := int32(i), int32(i)
		if src != nil {
			s = src[i]
		}
		if dst != nil {
			d = dst[i]
		}
		if int(s) >= xRows || d < 0 || int(d) >= outRows {
			return fmt.Errorf("copy rows: move %d reads row %d of %d and writes row %d of %d", i, s, xRows, d, outRows)
		}
		if seen != nil {
			if _, dup := seen[d]; dup {
				return fmt.Errorf("copy rows: row %d is written twice (move %d)", d, i)
			}
			seen[d] = struct{}{}
		}
	}
	return nil
}

// CheckBatch is a batched GEMM's shape rule: 1 ≤ batch ≤ 2³¹−1, strides
// ≥ 0 whose last offset (batch−1)·stride does not overflow, outputs that
// do not overlap with more than one matrix (strideC at least one C, so
// every output has one writer on a device that runs the batch at once),
// and the first and the last product each fitting its buffers (Check). A
// and B may be shared (stride 0).
func CheckBatch(op GemmOp, batch, strideA, strideB, strideC int) error {
	if batch < 1 || batch > math.MaxInt32 {
		return shapeError("batched gemm", "batch %d: want 1 to %d", batch, math.MaxInt32)
	}
	for _, s := range []int{strideA, strideB, strideC} {
		if s < 0 || (s > 0 && batch-1 > math.MaxInt/s) {
			return shapeError("batched gemm", "stride %d for a batch of %d: want ≥ 0 with (batch−1)·stride representable", s, batch)
		}
	}
	if err := op.Check(); err != nil {
		return err
	}
	_, _, ldc := op.LeadingDims()
	if batch > 1 && op.M > 0 && op.N > 0 && strideC < (op.M-1)*ldc+op.N {
		return shapeError("batched gemm", "output stride %d overlaps the %d×%d outputs (leading dimension %d)", strideC, op.M, op.N, ldc)
	}
	return op.checkAt((batch-1)*strideA, (batch-1)*strideB, (batch-1)*strideC)
}
