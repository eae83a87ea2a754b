package kernels

import (
	"fmt"

	"github.com/gleaner-rag/gleaner/engine"
)

// CopyRowsArgs moves N rows of Cols values from X to Out: Out[Dst[i]] =
// X[Src[i]], or += with Add. Src and Dst may be nil for the identity; a
// negative Src[i] writes a zero row (nothing with Add). Dst entries must
// be distinct: each output row has one writer, so the rows move in
// parallel and the result does not depend on the order.
type CopyRowsArgs struct {
	N, Cols  int
	X, Out   []float32
	Src, Dst []int32
	Add      bool
}

// CopyRows gathers and scatters rows (SeedER's embedding lookups and
// virtual-node rows).
//
// Reference loop: for each i, row Src[i] of X into row Dst[i] of Out.
func CopyRows(a CopyRowsArgs) error {
	if err := a.check(); err != nil {
		return err
	}
	parallelRows(a.N, a.Cols, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			a.copyRow(i)
		}
	})
	return nil
}

func (a *CopyRowsArgs) copyRow(i int) {
	s, d := a.rows(i)
	out := a.Out[d*a.Cols : (d+1)*a.Cols]
	switch {
	case s < 0 && a.Add:
	case s < 0:
		clear(out)
	case a.Add:
		for j, v := range a.X[s*a.Cols : (s+1)*a.Cols] {
			out[j] += v
		}
	default:
		copy(out, a.X[s*a.Cols:(s+1)*a.Cols])
	}
}

// rows is move i's source and destination rows.
func (a *CopyRowsArgs) rows(i int) (src, dst int) {
	src, dst = i, i
	if a.Src != nil {
		src = int(a.Src[i])
	}
	if a.Dst != nil {
		dst = int(a.Dst[i])
	}
	return src, dst
}

// check validates the shape and every index.
func (a *CopyRowsArgs) check() error {
	if a.Cols <= 0 {
		return fmt.Errorf("kernels: copy rows: %d columns", a.Cols)
	}
	if err := engine.CheckCopyRows(a.N, a.Cols, a.Src, a.Dst, len(a.X)/a.Cols, len(a.Out)/a.Cols); err != nil {
		return fmt.Errorf("kernels: %w", err)
	}
	return nil
}
