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
	if nq < 0 || k < 0 || nq > len(Q)/m.D {
		return nil, fmt.Errorf("kernels: FlatIPQuantized: %d query values for %d queries of %d, k=%d", len(Q), nq, m.D, k)
	}
	if scan := quantScanInC(m, Q, nq); scan != nil && nq < widenMinBatch && scanInCFits(nq, min(k, m.N)) {
		return flatScanWith(ctx, m.N, k, workers, nq, func(ctx context.Context, lo, hi, k int) ([][]Hit, error) {
			return scanInC(ctx, nq, min(k, hi-lo), func(s *scanState) bool { return scan(lo, hi, s) })
		})
	}
	return flatScan(ctx, m.N, k, workers, Q, nq, func() blockScorer { return quantScorer(m, nq) })
}

// scanTopI8 and scanTopBF16 are scanTop over the quantized kernels (int8
// scores times their rows' scale, as quantScorer's), nil where the CPU
// lacks them.
var (
	scanTopI8   func(X []int8, scale []float32, rows, d int, Q []float32, nq int, base int32, s *scanState) bool
	scanTopBF16 func(X []uint16, rows, d int, Q []float32, nq int, base int32, s *scanState) bool
)

// quantScanInC returns the scan in C of m's rows [lo, hi), or nil.
func quantScanInC(m *QuantRows, Q []float32, nq int) func(lo, hi int, s *scanState) bool {
	d := m.D
	switch {
	case m.Kind == engine.QuantBF16 && scanTopBF16 != nil:
		return func(lo, hi int, s *scanState) bool {
			return scanTopBF16(m.BF16[lo*d:hi*d], hi-lo, d, Q, nq, int32(lo), s)
		}
	case m.Kind == engine.QuantInt8 && scanTopI8 != nil:
		return func(lo, hi int, s *scanState) bool {
			return scanTopI8(m.I8[lo*d:hi*d], m.Scale[lo:hi], hi-lo, d, Q, nq, int32(lo), s)
		}
	}
	return nil
}

// widenMinBatch is the batch from which a quantized block is widened to
// float32 once and scored by dotBlock: the scan is then compute-bound, and
// widening each row once per block beats widening it once per query tile
// (10⁶ × 384, AVX-512, 2 cores: int8 at batch 32 took 232 ms in registers
// and 165 ms widened, against float32's 174–178 ms; at batch 16 in
// registers 74–86 ms against float32's 97–109).
const widenMinBatch = 32

// quantScorer scores blocks of m's rows: in registers by the quantized
// kernels, or from nq ≥ widenMinBatch by dotBlock over the block widened
// to float32 (the same values summed in the same order: the scores are
// equal bit for bit, so a query's candidates never depend on its batch).
// Int8 scores are then scaled by their rows' scales.
func quantScorer(m *QuantRows, nq int) blockScorer {
	d := m.D
	var wide []float32
	if nq >= widenMinBatch {
		wide = make([]float32, flatBlockRows*d)
	}
	return func(start, rows int, Q []float32, nq int, out []float32) {
		lo, hi := start*d, (start+rows)*d
		switch {
		case wide != nil:
			widen(m, lo, hi, wide)
			dotBlock(wide[:hi-lo], rows, d, Q, nq, out)
		case m.Kind == engine.QuantBF16:
			dotBlockBF16(m.BF16[lo:hi], rows, d, Q, nq, out)
		default:
			dotBlockI8(m.I8[lo:hi], rows, d, Q, nq, out)
		}
		if m.Kind == engine.QuantInt8 {
			scaleRows(out, m.Scale[start:start+rows], nq)
		}
	}
}

// widen writes m's values [lo, hi) as float32 into dst.
func widen(m *QuantRows, lo, hi int, dst []float32) {
	if m.Kind == engine.QuantBF16 {
		widenBF16(m.BF16[lo:hi], dst)
	} else {
		widenI8(m.I8[lo:hi], dst)
	}
}

// widenI8 and widenBF16 write their values as float32 into out; the SIMD
// path replaces them at start-up.
var (
	widenI8   = func(x []int8, out []float32) { widenGo(x, out, func(v int8) float32 { return float32(v) }) }
	widenBF16 = func(x []uint16, out []float32) { widenGo(x, out, FromBF16) }
)

func widenGo[T int8 | uint16](x []T, out []float32, f func(T) float32) {
	out = out[:len(x)]
	for i, v := range x {
		out[i] = f(v)
	}
}

// scaleRows multiplies each query's block of scores by the rows' scales.
func scaleRows(out, scale []float32, nq int) {
	rows := len(scale)
	for q := 0; q < nq; q++ {
		o := out[q*rows : (q+1)*rows]
		for r, s := range scale {
			o[r] *= s
		}
	}
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
	c := min(max(k, candidates), m.N)
	cands, err := FlatIPQuantized(ctx, m, Q, nq, c, workers)
	if err != nil {
		return nil, err
	}
	d := m.D
	out := make([][]Hit, nq)
	ids, exact := make([]int32, 0, c), make([]float32, c)
	top := NewTopK(k)
	for q, hits := range cands {
		ids = ids[:0]
		for _, h := range hits {
			ids = append(ids, h.Index)
		}
		dotRows(X, d, ids, Q[q*d:(q+1)*d], exact)
		top.Reset(k)
		for i, id := range ids {
			top.Push(id, exact[i])
		}
		out[q] = top.Results()
	}
	return out, nil
}

// ScoreCodes scores the len(scale) contiguous int8 rows of codes (width d)
// against q: out[r] = scale[r] · (codes row r · q), with the quantized
// scan's kernel and arithmetic (dotBlockI8, then the scale).
func ScoreCodes(codes []int8, scale []float32, d int, q, out []float32) {
	rows := len(scale)
	if d <= 0 || len(q) != d || len(codes) != rows*d || len(out) < rows {
		panic(fmt.Sprintf("kernels: ScoreCodes: d %d, query %d, %d codes for %d rows, out %d", d, len(q), len(codes), rows, len(out)))
	}
	if rows == 0 {
		return
	}
	dotBlockI8(codes, rows, d, q, 1, out[:rows])
	scaleRows(out[:rows], scale, 1)
}
