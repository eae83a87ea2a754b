package kernels

import (
	"fmt"

	"github.com/gleaner-rag/gleaner/engine"
)

// CSRMatrix is the engine's sparse matrix (the contract defines it).
type CSRMatrix = engine.CSRMatrix

// SpMM computes Y = A·X for sparse A (Rows×Cols) and dense row-major X
// (Cols×d), Y (Rows×d), in parallel over row ranges.
//
// Reference loop: Y[i,:] = Σ_{p ∈ row i} Val[p]·X[Idx[p],:].
func SpMM(a CSRMatrix, x []float32, d int, y []float32) error {
	if err := a.Check(); err != nil {
		return err
	}
	if len(x) < a.Cols*d || len(y) < a.Rows*d {
		return fmt.Errorf("kernels: spmm: dense operands too short for %d×%d·%d×%d", a.Rows, a.Cols, a.Cols, d)
	}
	parallelRows(a.Rows, int(a.Ptr[a.Rows])*d/max(a.Rows, 1)+d, func(lo, hi int) {
		spmmRange(&a, x, d, y, lo, hi)
	})
	return nil
}

// spmmRange computes rows [lo, hi) of SpMM; a SIMD version replaces it at
// start-up where the CPU allows.
var spmmRange = spmmRangeGo

func spmmRangeGo(a *CSRMatrix, x []float32, d int, y []float32, lo, hi int) {
	for i := lo; i < hi; i++ {
		spmmRow(a, i, x, d, y[i*d:(i+1)*d])
	}
}

func spmmRow(a *CSRMatrix, i int, x []float32, d int, out []float32) {
	clear(out)
	for p := a.Ptr[i]; p < a.Ptr[i+1]; p++ {
		w := float32(1)
		if a.Val != nil {
			w = a.Val[p]
		}
		axpy(w, x[int(a.Idx[p])*d:int(a.Idx[p]+1)*d], out)
	}
}

// axpy adds w·x to y (unrolled by four so the adds overlap).
func axpy(w float32, x, y []float32) {
	x = x[:len(y)]
	j := 0
	for ; j+4 <= len(y); j += 4 {
		y[j] += w * x[j]
		y[j+1] += w * x[j+1]
		y[j+2] += w * x[j+2]
		y[j+3] += w * x[j+3]
	}
	for ; j < len(y); j++ {
		y[j] += w * x[j]
	}
}
