package kernels

import (
	"fmt"

	"github.com/gleaner-rag/gleaner/engine"
)

// SmoothArgs describes GRanker's Laplacian smoothing (FastInsight,
// docs/methods.md §1.2) over the subgraph induced by m retrieved nodes:
//
//	A_ij = 1 if (n_i, n_j) is an edge (Adj, local ids, one entry per pair)
//	W_ij = A_ij / deg(n_j)            deg = degree in the full graph (Deg)
//	P    = diag(W·1)⁻¹ · W            (row-normalised)
//	H'   = (1 − α)·H + α·P·H
//
// A row with no subgraph neighbour has an empty P row. Literally that gives
// H'_i = (1 − α)·H_i (the default, as the paper's formula reads); with
// KeepIsolated, H'_i = H_i (the node keeps its own latent).
type SmoothArgs struct {
	Adj          CSRMatrix // m×m, values ignored
	Deg          []float32 // global degree of each of the m nodes, > 0 where it has neighbours
	H, Out       []float32 // m×d
	D            int
	Alpha        float32
	KeepIsolated bool
}

// PropagationMatrix is engine.PropagationMatrix (shared by every backend's
// smoothing).
var PropagationMatrix = engine.PropagationMatrix

// Smooth computes H' of SmoothArgs: P·H by SpMM, then the convex mix, row by
// row so each output row is written once.
//
// Reference loop: build P densely in float64, H' = (1−α)H + αPH.
func Smooth(a SmoothArgs) error {
	if a.Adj.Rows != a.Adj.Cols {
		return fmt.Errorf("kernels: smooth: adjacency is %d×%d, want square", a.Adj.Rows, a.Adj.Cols)
	}
	m, d := a.Adj.Rows, a.D
	if len(a.H) < m*d || len(a.Out) < m*d {
		return fmt.Errorf("kernels: smooth: latents shorter than %d×%d", m, d)
	}
	p, err := PropagationMatrix(a.Adj, a.Deg, a.KeepIsolated)
	if err != nil {
		return err
	}
	ph := make([]float32, d)
	for i := 0; i < m; i++ {
		spmmRow(&p, i, a.H, d, ph)
		h, out := a.H[i*d:(i+1)*d], a.Out[i*d:(i+1)*d]
		for j := range out {
			out[j] = (1-a.Alpha)*h[j] + a.Alpha*ph[j]
		}
	}
	return nil
}
