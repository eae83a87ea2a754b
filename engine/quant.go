package engine

import (
	"context"
	"fmt"
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
	if m.N < 0 || m.D <= 0 {
		return fmt.Errorf("quantized rows: bad shape %d×%d", m.N, m.D)
	}
	switch m.Kind {
	case QuantBF16:
		if len(m.BF16) != m.N*m.D {
			return fmt.Errorf("quantized rows: %d bf16 values, want %d×%d", len(m.BF16), m.N, m.D)
		}
	case QuantInt8:
		if len(m.I8) != m.N*m.D || len(m.Scale) != m.N {
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
