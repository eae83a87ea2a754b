package kernels

import (
	"fmt"

	"github.com/gleaner-rag/gleaner/engine"
)

// EdgeMessageArgs is GraphGPS's local, relation-gated message sum over
// edges grouped by destination (as EdgeAttentionArgs): the edges into node
// i are Ptr[i]..Ptr[i+1] with source Src[p] and feature row ERow[p]. M and
// Out are N×D, F is Rows×D; edges whose row is Rows or beyond (SeedER's
// expander and virtual-node edges) carry no message.
type EdgeMessageArgs struct {
	N, D, Rows int
	Ptr        []int64
	Src, ERow  []int32
	M, F, Out  []float32
}

// EdgeMessage computes, per destination i,
//
//	Out_i = Σ_{p: ERow[p] < Rows} M[Src[p]] ⊙ F[ERow[p]]
//
// in parallel over destinations (one writer per output row, summed in edge
// order, so the result is deterministic). Nodes without messages get
// zeros.
//
// Reference loop: the same sum in float64.
func EdgeMessage(a EdgeMessageArgs) error {
	if err := a.check(); err != nil {
		return err
	}
	parallelRows(a.N, int(a.Ptr[a.N])/max(a.N, 1)*a.D+a.D, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			a.node(i)
		}
	})
	return nil
}

func (a *EdgeMessageArgs) node(i int) {
	out := a.Out[i*a.D : (i+1)*a.D]
	clear(out)
	for p := a.Ptr[i]; p < a.Ptr[i+1]; p++ {
		r := int(a.ERow[p])
		if r >= a.Rows {
			continue
		}
		m, f := a.M[int(a.Src[p])*a.D:], a.F[r*a.D:]
		for j := range out {
			out[j] += m[j] * f[j]
		}
	}
}

func (a *EdgeMessageArgs) check() error {
	if a.D <= 0 || a.Rows < 0 {
		return fmt.Errorf("kernels: edge message: bad shape D=%d Rows=%d", a.D, a.Rows)
	}
	nnz, err := engine.CheckEdges("kernels: edge message", a.N, a.Ptr, a.Src)
	if err != nil {
		return err
	}
	if len(a.M) < a.N*a.D || len(a.F) < a.Rows*a.D || len(a.Out) < a.N*a.D {
		return fmt.Errorf("kernels: edge message: buffers too short for %d nodes and %d rows of %d", a.N, a.Rows, a.D)
	}
	return engine.CheckFeatureRows("kernels: edge message", a.ERow, nnz, a.Rows, true)
}
