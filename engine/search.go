package engine

import (
	"context"
	"errors"
	"fmt"
)

// Host-side drivers of the search ops, for callers that hold their queries
// or scores on the host: they run the op on b (a queue view of it where
// the backend has them) and download the hits.

// SearchFlat runs FlatIP over x (n rows of d values, a buffer of b's
// backend, usually bound) for the nq queries in q (row-major) and returns
// each query's top k, best first (ties: the lower row).
func SearchFlat(ctx context.Context, b Backend, x Buffer, n, d int, q []float32, nq, k int) ([][]Hit, error) {
	k = min(k, n)
	out := make([][]Hit, nq)
	if k <= 0 || nq == 0 {
		return out, nil
	}
	v, release, err := OnQueue(b)
	if err != nil {
		return nil, err
	}
	defer release()
	qb, err := Upload(v, q[:nq*d])
	if err != nil {
		return nil, err
	}
	defer v.Free(qb)
	return withHitBuffers(ctx, v, nq, k, func(idx, sc Buffer) error {
		return v.FlatIP(FlatIPOp{X: x, Q: qb, N: n, D: d, B: nq, K: k, OutIdx: idx, OutScore: sc})
	})
}

// RowScorer is an optional op of a backend whose search kernel scores
// rows faster than its Gemm does by one query (the host: the BLAS's
// one-row GEMM took twice the scan's time, measured). A backend that
// has it scores each row with FlatIP's arithmetic, so a row's score is
// the same bit for bit in a ScoreRows and in a FlatIP on that backend
// (kerneltest checks both). It returns ErrNotImplemented before any work
// where it cannot run op.
type RowScorer interface {
	ScoreRows(op ScoreRowsOp) error
}

// ScoreRows writes every row's dot product with the query into op.Out:
// by b's RowScorer where it has one, else as the one-row product Q·Xᵀ.
func ScoreRows(b Backend, op ScoreRowsOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", b.Name(), err)
	}
	if rs, ok := b.(RowScorer); ok {
		if err := rs.ScoreRows(op); !errors.Is(err, ErrNotImplemented) {
			return err
		}
	}
	return b.Gemm(GemmOp{TransB: true, M: 1, N: op.N, K: op.D, Alpha: 1, A: op.Q, B: op.X, C: op.Out})
}

// TopKRows runs TopK over a rows × cols score buffer of b and returns each
// row's top k, best first (ties: the lower column).
func TopKRows(ctx context.Context, b Backend, scores Buffer, rows, cols, k int) ([][]Hit, error) {
	k = min(k, cols)
	if k <= 0 || rows == 0 {
		return make([][]Hit, rows), nil
	}
	return withHitBuffers(ctx, b, rows, k, func(idx, sc Buffer) error {
		return b.TopK(TopKOp{Scores: scores, Rows: rows, Cols: cols, K: k, OutIdx: idx, OutScore: sc})
	})
}

// withHitBuffers allocates rows × k index and score outputs, runs op into
// them, waits and downloads the hits (an index of -1 ends a row).
func withHitBuffers(ctx context.Context, b Backend, rows, k int, op func(idx, sc Buffer) error) ([][]Hit, error) {
	idx, err := b.Alloc(I32, rows*k)
	if err != nil {
		return nil, err
	}
	defer b.Free(idx)
	sc, err := b.Alloc(F32, rows*k)
	if err != nil {
		return nil, err
	}
	defer b.Free(sc)
	if err := op(idx, sc); err != nil {
		return nil, err
	}
	if err := b.Sync(ctx); err != nil {
		return nil, err
	}
	ids, err := Download[int32](b, idx)
	if err != nil {
		return nil, err
	}
	scores, err := Download[float32](b, sc)
	if err != nil {
		return nil, err
	}
	out := make([][]Hit, rows)
	for r := range out {
		for j := 0; j < k && ids[r*k+j] >= 0; j++ {
			out[r] = append(out[r], Hit{Index: ids[r*k+j], Score: scores[r*k+j]})
		}
	}
	return out, nil
}
