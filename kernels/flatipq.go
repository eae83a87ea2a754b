package kernels

import (
	"context"
	"fmt"

	"github.com/gleaner-rag/gleaner/engine"
)

// FlatIPQuantized is FlatIP over a quantized matrix: each query's k rows
// with the largest inner product between the query and the row's
// quantized values (int8: the codes' dot product times the row's scale),
// best first, ties to the lower row.
//
// Reference loop: for each query, score every row's dequantized values
// with a float64 dot product, sort by (score desc, index asc), keep k.
func FlatIPQuantized(ctx context.Context, m *QuantRows, Q []float32, nq, k, workers int) ([][]Hit, error) {
	if err := m.Check(); err != nil {
		return nil, fmt.Errorf("kernels: FlatIPQuantized: %w", err)
	}
	if nq < 0 || k < 0 || len(Q) < nq*m.D {
		return nil, fmt.Errorf("kernels: FlatIPQuantized: %d query values for %d queries of %d, k=%d", len(Q), nq, m.D, k)
	}
	d := m.D
	if m.Kind == engine.QuantBF16 {
		return flatScan(ctx, m.N, k, workers, Q, nq, func(start, rows int, Q []float32, nq int, out []float32) {
			dotBlockBF16(m.BF16[start*d:(start+rows)*d], rows, d, Q, nq, out)
		})
	}
	return flatScan(ctx, m.N, k, workers, Q, nq, func(start, rows int, Q []float32, nq int, out []float32) {
		dotBlockI8(m.I8[start*d:(start+rows)*d], rows, d, Q, nq, out)
		scale := m.Scale[start : start+rows]
		for q := 0; q < nq; q++ {
			o := out[q*rows : (q+1)*rows]
			for r, s := range scale {
				o[r] *= s
			}
		}
	})
}

// SearchQuantized finds each query's best `candidates` rows (at least k)
// on the quantized matrix m, scores them again over X (m's float32 rows,
// n×d) exactly as FlatIP scores them, and returns the best k, best first,
// ties to the lower row. Its scores are FlatIP's; it misses a row of
// FlatIP's top k only when that row's quantized score is not among the
// query's best candidates.
func SearchQuantized(ctx context.Context, m *QuantRows, X, Q []float32, nq, k, candidates, workers int) ([][]Hit, error) {
	if err := m.Check(); err != nil {
		return nil, fmt.Errorf("kernels: SearchQuantized: %w", err)
	}
	if len(X) != m.N*m.D {
		return nil, fmt.Errorf("kernels: SearchQuantized: float32 matrix has %d values, quantized one %d×%d", len(X), m.N, m.D)
	}
	if candidates < 0 {
		return nil, fmt.Errorf("kernels: SearchQuantized: %d candidates", candidates)
	}
	cands, err := FlatIPQuantized(ctx, m, Q, nq, max(k, candidates), workers)
	if err != nil {
		return nil, err
	}
	d := m.D
	out := make([][]Hit, nq)
	ids, exact := make([]int32, 0, len(cands)), make([]float32, 0)
	top := NewTopK(k)
	for q, hits := range cands {
		ids = ids[:0]
		for _, h := range hits {
			ids = append(ids, h.Index)
		}
		exact = append(exact[:0], make([]float32, len(ids))...)
		dotRows(X, d, ids, Q[q*d:(q+1)*d], exact)
		top.Reset(k)
		for i, id := range ids {
			top.Push(id, exact[i])
		}
		out[q] = top.Results()
	}
	return out, nil
}
