package seeder

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// PCA reduces vectors of D values to K: z = (x − Mean)·Components, with
// Components D×K (the covariance's leading eigenvectors, largest first,
// times one scale that gives the kept components unit mean variance).
type PCA struct {
	Mean       []float32
	Components []float32
	K          int
}

// FitPCA fits k components to rows (each of d values). The paper fits PCA
// on the KG's nodes, relation types and training queries; the caller
// passes those rows. The eigen-decomposition of the d×d covariance is
// exact and cheap at embedder widths (d ≤ a few thousand).
func FitPCA(rows [][]float32, d, k int) (*PCA, error) {
	if k < 1 || k > d {
		return nil, fmt.Errorf("seeder: PCA to %d components of %d-dimensional vectors: want 1..%d", k, d, d)
	}
	if len(rows) < 2 {
		return nil, fmt.Errorf("seeder: PCA needs at least 2 vectors, got %d", len(rows))
	}
	mean := make([]float64, d)
	for i, r := range rows {
		if len(r) != d {
			return nil, fmt.Errorf("seeder: PCA row %d has %d values, want %d", i, len(r), d)
		}
		for j, v := range r {
			mean[j] += float64(v) / float64(len(rows))
		}
	}
	cov := mat.NewSymDense(d, nil)
	x := make([]float64, d)
	for _, r := range rows {
		for j, v := range r {
			x[j] = float64(v) - mean[j]
		}
		cov.SymRankOne(cov, 1/float64(len(rows)), mat.NewVecDense(d, x))
	}
	var eig mat.EigenSym
	if !eig.Factorize(cov, true) {
		return nil, fmt.Errorf("seeder: PCA: eigen-decomposition did not converge")
	}
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	vals := eig.Values(nil) // ascending
	// one global scale gives the kept components unit mean variance, so
	// the network's inputs are O(1) whatever the embedder's scale
	var kept float64
	for c := 0; c < k; c++ {
		kept += math.Max(vals[d-1-c], 0) / float64(k)
	}
	scale := 1.0
	if kept > 0 {
		scale = 1 / math.Sqrt(kept)
	}
	p := &PCA{Mean: make([]float32, d), Components: make([]float32, d*k), K: k}
	for j := range mean {
		p.Mean[j] = float32(mean[j])
	}
	for c := 0; c < k; c++ {
		col := d - 1 - c
		// a fixed sign (largest entry positive), so a refit is identical
		sign := 1.0
		best := 0.0
		for j := 0; j < d; j++ {
			if v := vecs.At(j, col); math.Abs(v) > best {
				best, sign = math.Abs(v), math.Copysign(1, v)
			}
		}
		for j := 0; j < d; j++ {
			p.Components[j*k+c] = float32(scale * sign * vecs.At(j, col))
		}
	}
	return p, nil
}

// Project reduces v (D values) to K.
func (p *PCA) Project(v []float32) []float32 {
	out := make([]float32, p.K)
	for j, x := range v {
		c := float32(x) - p.Mean[j]
		row := p.Components[j*p.K : (j+1)*p.K]
		for i := range out {
			out[i] += c * row[i]
		}
	}
	return out
}

// ProjectRows reduces n row-major vectors of len(Mean) values at once.
func (p *PCA) ProjectRows(x []float32, n int) []float32 {
	d := len(p.Mean)
	centred := make([]float32, n*d)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			centred[i*d+j] = x[i*d+j] - p.Mean[j]
		}
	}
	out := make([]float32, n*p.K)
	gemm(false, false, n, p.K, d, centred, p.Components, out, 0)
	return out
}
