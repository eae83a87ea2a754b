package lexical

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// FitLSA fits LSA on the documents behind p with a randomized truncated SVD
// (Halko, Martinsson & Tropp 2011: the randomized power iteration of their
// Alg. 4.3, with a QR after each product by A). When no term passes the
// document-frequency filters (a corpus of a few documents), every term is
// used. A corpus of more than o.SampleDocs documents is fitted on a seeded
// sample of them (LSAOptions.SampleDocs); FitDocs reports how many the fit
// used. The model's rows are over p.Flat()'s term ids, as EmbedDocs reads
// them.
func FitLSA(ctx context.Context, p *Postings, o LSAOptions) (*LSA, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	p = p.Flat() // the model's rows are over the flat table's ids
	sample := sampleDocs(p.NumDocs(), o)
	m := &LSA{}
	a := m.tfidfColumns(p, o, sample)
	if a.cols == 0 && sample != nil {
		return nil, fmt.Errorf("lsa: no term occurs in ≥ %d of the %d sampled documents; fit on more (sample docs)", o.MinDF, len(sample))
	}
	if a.cols == 0 && a.rows > 0 { // a few documents: no term passes the df filters, so every term counts
		all := o
		all.MinDF, all.MaxDFRatio = 1, 1
		*m = LSA{}
		a = m.tfidfColumns(p, all, sample)
	}
	if a.rows == 0 || a.cols == 0 {
		return nil, fmt.Errorf("lsa: no term occurs in ≥ %d documents; the corpus is too small for LSA", o.MinDF)
	}
	m.Dims = min(o.Dims, a.rows, a.cols)
	m.FitDocs = a.rows
	v, err := randomizedSVD(ctx, a, m.Dims, o)
	if err != nil {
		return nil, err
	}
	m.V = v
	return m, nil
}

// sampleDocs returns the ascending ids of the documents to fit on, a seeded
// uniform sample of o.SampleDocs of the n, or nil to fit on all of them.
func sampleDocs(n int, o LSAOptions) []int32 {
	if o.SampleDocs == 0 || n <= o.SampleDocs {
		return nil
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x5a3b1e))
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	for i := 0; i < o.SampleDocs; i++ { // a partial Fisher–Yates shuffle
		j := i + rng.IntN(n-i)
		ids[i], ids[j] = ids[j], ids[i]
	}
	ids = ids[:o.SampleDocs:o.SampleDocs]
	slices.Sort(ids)
	return ids
}

// tfidfColumns builds the TF-IDF matrix of the sampled documents (every
// document when sample is nil). The df filters and IDF are the whole
// corpus's; a term must also occur in MinDF sampled documents to get an LSA
// row. (A term in no sampled document would get a zero row; counting those
// met once, at 10⁶ passages, fitted on 554k terms instead of 319k, mostly
// names, and took 1.7× as long.)
func (m *LSA) tfidfColumns(p *Postings, o LSAOptions, sample []int32) *csc {
	n := p.NumDocs()
	rowOf := sampleRows(n, sample)
	m.Row = make([]int32, p.Terms.Len())
	a := &csc{rows: n, ptr: []int{0}}
	if sample != nil {
		a.rows = len(sample)
	}
	rowNorm := make([]float64, a.rows)
	for t := range m.Row {
		m.Row[t] = -1
		lo, hi := p.Ptr[t], p.Ptr[t+1]
		df := int(hi - lo)
		if df < o.MinDF || float64(df) > o.MaxDFRatio*float64(n) {
			continue
		}
		idf := math.Log(float64(1+n)/float64(1+df)) + 1
		start := len(a.row)
		for i := lo; i < hi; i++ {
			r := int32(p.Doc[i])
			if rowOf != nil {
				if r = rowOf[r]; r < 0 {
					continue
				}
			}
			a.row = append(a.row, r)
			a.val = append(a.val, (1+math.Log(float64(p.TF[i])))*idf)
		}
		if len(a.row)-start < min(o.MinDF, df) {
			a.row, a.val = a.row[:start], a.val[:start]
			continue
		}
		for i := start; i < len(a.row); i++ {
			rowNorm[a.row[i]] += a.val[i] * a.val[i]
		}
		m.Row[t] = int32(a.cols)
		m.IDF = append(m.IDF, float32(idf))
		a.cols++
		a.ptr = append(a.ptr, len(a.row))
	}
	for i, r := range a.row {
		a.val[i] /= math.Sqrt(rowNorm[r])
	}
	return a
}

// sampleRows maps each document to its row among the sampled ones (-1 when
// not sampled); nil when every document is a row.
func sampleRows(n int, sample []int32) []int32 {
	if sample == nil {
		return nil
	}
	rowOf := make([]int32, n)
	for i := range rowOf {
		rowOf[i] = -1
	}
	for r, d := range sample {
		rowOf[d] = int32(r)
	}
	return rowOf
}

// qr turns matrices into their thin Q factor in place (Householder QR
// through LAPACK's geqrf + orgqr, which never forms the full square Q),
// reusing its workspace.
type qr struct{ tau, work []float64 }

func (f *qr) orthonormalize(y *mat.Dense) {
	a := y.RawMatrix()
	if len(f.tau) != min(a.Rows, a.Cols) {
		f.tau = make([]float64, min(a.Rows, a.Cols))
		query := []float64{0}
		lapack64.Geqrf(a, f.tau, query, -1)
		need := query[0]
		lapack64.Orgqr(a, f.tau, query, -1)
		f.work = make([]float64, max(int(need), int(query[0]), a.Cols))
	}
	lapack64.Geqrf(a, f.tau, f.work, len(f.work))
	lapack64.Orgqr(a, f.tau, f.work, len(f.work))
}

// randomizedSVD returns the top-k right singular vectors of a, scaled so
// that x·V equals the projection scikit-learn's TruncatedSVD.transform gives.
//
// The subspace iteration orthonormalises only the documents' side, after
// each product by A·Aᵀ: its columns then spread by (σ₁/σⱼ)², so only
// directions below σ₁·1e-8 drown in float64 rounding, far below the k
// kept. The terms' side QR this saves was half the fitting time at 10⁶
// passages, where the sample holds 3× more terms than documents. It holds
// one documents × l and one terms × l matrix, each reused.
func randomizedSVD(ctx context.Context, a *csc, k int, o LSAOptions) ([]float32, error) {
	l := min(k+o.Oversample, a.rows, a.cols)
	rng := rand.New(rand.NewPCG(o.Seed, 0x1ea5))
	z := mat.NewDense(a.cols, l, nil) // Ω first, then Aᵀ·Q
	for i := range z.RawMatrix().Data {
		z.RawMatrix().Data[i] = rng.NormFloat64()
	}
	q := mat.NewDense(a.rows, l, nil)
	var f qr
	a.mulDense(z, q)
	f.orthonormalize(q)
	for it := 0; it < o.PowerIters; it++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		a.tmulDense(q, z)
		a.mulDense(z, q)
		f.orthonormalize(q)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	bt := z
	a.tmulDense(q, bt) // Bᵀ = Aᵀ Q, cols×l
	bbt := mat.NewDense(l, l, nil)
	bbt.Mul(bt.T(), bt) // B Bᵀ (l×l), on all cores; its upper triangle is read as symmetric
	var eig mat.EigenSym
	if !eig.Factorize(mat.NewSymDense(l, bbt.RawMatrix().Data), true) {
		return nil, errors.New("lsa: eigendecomposition did not converge")
	}
	var ub mat.Dense
	eig.VectorsTo(&ub)
	return rightVectors(bt, &ub, eig.Values(nil), k), nil
}

// rightVectors forms V_k = Bᵀ U_B Σ⁻¹ for the k largest eigenvalues in one
// matrix product, with a sign convention (largest-magnitude entry
// positive) so runs are identical.
func rightVectors(bt, ub *mat.Dense, vals []float64, k int) []float32 {
	order := make([]int, len(vals))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return vals[order[i]] > vals[order[j]] })
	cols, l := bt.Dims()
	top := mat.NewDense(l, k, nil) // the k leading eigenvectors, scaled by 1/σ
	for j := 0; j < k; j++ {
		scale := 0.0
		if sigma := math.Sqrt(max(vals[order[j]], 0)); sigma > 1e-12 {
			scale = 1 / sigma
		}
		for i := 0; i < l; i++ {
			top.Set(i, j, ub.At(i, order[j])*scale)
		}
	}
	var vk mat.Dense
	vk.Mul(bt, top)
	raw := vk.RawMatrix()
	v := make([]float32, cols*k)
	for j := 0; j < k; j++ {
		sign := 1.0
		if raw.Data[argmaxAbsCol(raw, j)*raw.Stride+j] < 0 {
			sign = -1
		}
		for t := 0; t < cols; t++ {
			v[t*k+j] = float32(sign * raw.Data[t*raw.Stride+j])
		}
	}
	return v
}

// argmaxAbsCol is the row of column j's largest-magnitude entry (the first
// on ties).
func argmaxAbsCol(m blas64.General, j int) int {
	best := 0
	for i := 1; i < m.Rows; i++ {
		if math.Abs(m.Data[i*m.Stride+j]) > math.Abs(m.Data[best*m.Stride+j]) {
			best = i
		}
	}
	return best
}
