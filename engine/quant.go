package engine

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// The scalar quantizations of a vector matrix (QuantRows.Kind).
const (
	// QuantBF16 keeps each value's sign, exponent and top 7 mantissa bits
	// (bfloat16, rounded to nearest even): half the bytes of float32.
	QuantBF16 = "bf16"
	// QuantInt8 keeps each row as signed steps of its largest magnitude
	// /127, with one float32 scale per row: a quarter of the bytes.
	QuantInt8 = "int8"
)

// QuantKinds lists the quantizations, for flags and errors.
func QuantKinds() []string { return []string{QuantBF16, QuantInt8} }

// QuantRows is a row-major N×D matrix quantized row by row. Row r's value
// j is float32(BF16[r*D+j]<<16) under QuantBF16, and Scale[r]·I8[r*D+j]
// under QuantInt8.
type QuantRows struct {
	Kind  string
	N, D  int
	BF16  []uint16  // N×D under QuantBF16
	I8    []int8    // N×D under QuantInt8
	Scale []float32 // N under QuantInt8
}

// Check verifies the matrix's shape against its kind.
func (m *QuantRows) Check() error {
	// Rows are numbered by int32 (Hit.Index); the sizes are compared by
	// division, which cannot overflow as N·D can.
	if m.N < 0 || m.N > math.MaxInt32 || m.D <= 0 {
		return fmt.Errorf("quantized rows: bad shape %d×%d", m.N, m.D)
	}
	switch m.Kind {
	case QuantBF16:
		if len(m.BF16)%m.D != 0 || len(m.BF16)/m.D != m.N {
			return fmt.Errorf("quantized rows: %d bf16 values, want %d×%d", len(m.BF16), m.N, m.D)
		}
	case QuantInt8:
		if len(m.I8)%m.D != 0 || len(m.I8)/m.D != m.N || len(m.Scale) != m.N {
			return fmt.Errorf("quantized rows: %d int8 values and %d scales, want %d×%d and %d", len(m.I8), len(m.Scale), m.N, m.D, m.N)
		}
	default:
		return fmt.Errorf("quantized rows: kind %q, want one of %v", m.Kind, QuantKinds())
	}
	return nil
}

// Bytes is the size of the quantized values (and scales) a full scan reads.
func (m *QuantRows) Bytes() int { return 2*len(m.BF16) + len(m.I8) + 4*len(m.Scale) }

// QuantSearcher is implemented by a backend whose kernels run on the host
// and can search quantized rows: for each of the nq queries (row-major in
// q, width m.D) it scans m for the best `candidates` rows by their
// quantized scores, scores those rows again over the float32 matrix X
// exactly as its FlatIP scores them, and returns the best k, best first
// (ties: the lower row). So every score it reports is the exact one; only
// a row of the exact top k whose quantized score falls outside the
// candidates can be missed.
type QuantSearcher interface {
	SearchQuantized(ctx context.Context, m *QuantRows, X []float32, q []float32, nq, k, candidates int) ([][]Hit, error)
}

// QuantSearcherOf returns be's quantized search, or nil when it has none.
func QuantSearcherOf(be Backend) QuantSearcher {
	if s, ok := be.(QuantSearcher); ok {
		return s
	}
	return nil
}

// Quantize returns the n×d row-major matrix X quantized as kind
// (QuantBF16 or QuantInt8). A non-finite value is an error:
// its quantized score would poison every query it meets.
func Quantize(X []float32, n, d int, kind string) (*QuantRows, error) {
	if n < 0 || d <= 0 || len(X) != n*d {
		return nil, fmt.Errorf("engine: Quantize: %d values for %d×%d", len(X), n, d)
	}
	if i := FirstNonFinite(X); i >= 0 {
		return nil, fmt.Errorf("engine: Quantize: row %d value %d is %v", i/d, i%d, X[i])
	}
	m := &QuantRows{Kind: kind, N: n, D: d}
	switch kind {
	case QuantBF16:
		m.BF16 = make([]uint16, len(X))
		quantRows(n, func(lo, hi int) {
			for i, v := range X[lo*d : hi*d] {
				m.BF16[lo*d+i] = BF16(v)
			}
		})
	case QuantInt8:
		m.I8, m.Scale = make([]int8, len(X)), make([]float32, n)
		quantRows(n, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				m.Scale[r] = quantizeRowInt8(X[r*d:(r+1)*d], m.I8[r*d:(r+1)*d])
			}
		})
	default:
		return nil, fmt.Errorf("engine: Quantize: kind %q, want one of %v", kind, QuantKinds())
	}
	return m, nil
}

// quantRows runs fn over row ranges [lo, hi) covering n rows, split over
// the cores (quantizing is per row, so the result does not depend on it).
func quantRows(n int, fn func(lo, hi int)) {
	w := max(1, min(runtime.GOMAXPROCS(0), n/1024))
	var wg sync.WaitGroup
	for i := 0; i < w; i++ {
		lo, hi := i*n/w, (i+1)*n/w
		wg.Add(1)
		go func() { defer wg.Done(); fn(lo, hi) }()
	}
	wg.Wait()
}

// FirstNonFinite is the position of X's first NaN or infinity, or -1.
func FirstNonFinite(X []float32) int {
	for i, v := range X {
		if math.Float32bits(v)&0x7f800000 == 0x7f800000 { // exponent all ones
			return i
		}
	}
	return -1
}

// BF16 rounds a finite float32 to bfloat16 (nearest, ties to even): the top
// 16 bits of the rounded value. Magnitudes that would round past the
// largest bfloat16 saturate to it rather than become infinite.
func BF16(v float32) uint16 {
	u := math.Float32bits(v)
	if u&0x7fffffff >= 0x7f7f8000 { // rounds up into the exponent of infinity
		return uint16(u>>16)&0x8000 | 0x7f7f
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// FromBF16 is the float32 a bfloat16 stands for.
func FromBF16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// quantizeRowInt8 writes row as steps of scale = max|row|/127 into codes
// (rounded to nearest, so every value is within scale/2) and returns the
// scale; a zero row has scale 0.
func quantizeRowInt8(row []float32, codes []int8) float32 {
	var top float32
	for _, v := range row {
		top = max(top, v, -v)
	}
	if top == 0 {
		clear(codes)
		return 0
	}
	scale := top / 127
	inv := 127 / float64(top) // in float64: 127/top overflows float32 for rows below 3.7e-37
	for j, v := range row {
		codes[j] = int8(max(-127, min(127, math.Round(float64(v)*inv))))
	}
	return scale
}
