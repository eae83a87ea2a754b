package lexical

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// LSAOptions configures LSA fitting.
type LSAOptions struct {
	Dims       int     // output dimensions (default 256)
	MinDF      int     // terms in fewer documents are dropped (default 2)
	MaxDFRatio float64 // terms in more than this share of documents are dropped (default 0.5)
	Oversample int     // extra random directions for the range finder (default 10)
	PowerIters int     // subspace iterations (default 2)
	Seed       uint64  // RNG seed (default 1): fitting is deterministic
}

// DefaultLSA returns the defaults documented on LSAOptions.
func DefaultLSA() LSAOptions {
	return LSAOptions{Dims: 256, MinDF: 2, MaxDFRatio: 0.5, Oversample: 10, PowerIters: 2, Seed: 1}
}

// Validate rejects meaningless options.
func (o LSAOptions) Validate() error {
	var errs []error
	if o.Dims <= 0 {
		errs = append(errs, fmt.Errorf("lsa: dims must be positive, got %d", o.Dims))
	}
	if o.MinDF < 1 {
		errs = append(errs, fmt.Errorf("lsa: min df must be ≥ 1, got %d", o.MinDF))
	}
	if !(o.MaxDFRatio > 0 && o.MaxDFRatio <= 1) {
		errs = append(errs, fmt.Errorf("lsa: max df ratio must be in (0,1], got %v", o.MaxDFRatio))
	}
	if o.Oversample < 0 || o.PowerIters < 0 {
		errs = append(errs, errors.New("lsa: oversample and power iterations must be ≥ 0"))
	}
	return errors.Join(errs...)
}

// LSA embeds text as normalize(tfidf(text) · V), where V (terms × dims) holds
// the top right singular vectors of the corpus TF-IDF matrix. TF-IDF uses
// sublinear tf (1 + ln tf), smooth idf ln((1+N)/(1+df)) + 1 and L2-normalised
// rows, as scikit-learn's TfidfVectorizer(sublinear_tf=True) does.
type LSA struct {
	Row  []int32   // postings term id → LSA row, -1 when the term is not used
	IDF  []float32 // per LSA row
	V    []float32 // rows × Dims, row-major
	Dims int
}

// FitLSA fits LSA on the documents behind p with a randomized truncated SVD
// (Halko, Martinsson & Tropp 2011, Alg. 4.4 with QR re-orthonormalisation).
// When no term passes the document-frequency filters (a corpus of a few
// documents), every term is used.
func FitLSA(ctx context.Context, p *Postings, o LSAOptions) (*LSA, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	m := &LSA{}
	a := m.tfidfColumns(p, o)
	if a.cols == 0 && a.rows > 0 { // a few documents: no term passes the df filters, so every term counts
		all := o
		all.MinDF, all.MaxDFRatio = 1, 1
		*m = LSA{}
		a = m.tfidfColumns(p, all)
	}
	if a.rows == 0 || a.cols == 0 {
		return nil, fmt.Errorf("lsa: no term occurs in ≥ %d documents; the corpus is too small for LSA", o.MinDF)
	}
	m.Dims = min(o.Dims, a.rows, a.cols)
	v, err := randomizedSVD(ctx, a, m.Dims, o)
	if err != nil {
		return nil, err
	}
	m.V = v
	return m, nil
}

// csc is the TF-IDF matrix (documents × LSA terms) stored by term column,
// straight from the postings.
type csc struct {
	rows, cols int
	ptr        []int
	row        []int32
	val        []float64
}

func (m *LSA) tfidfColumns(p *Postings, o LSAOptions) *csc {
	n := p.NumDocs()
	m.Row = make([]int32, p.Terms.Len())
	a := &csc{rows: n, ptr: []int{0}}
	rowNorm := make([]float64, n)
	for t := range m.Row {
		lo, hi := p.Ptr[t], p.Ptr[t+1]
		df := int(hi - lo)
		if df < o.MinDF || float64(df) > o.MaxDFRatio*float64(n) {
			m.Row[t] = -1
			continue
		}
		m.Row[t] = int32(a.cols)
		idf := math.Log(float64(1+n)/float64(1+df)) + 1
		m.IDF = append(m.IDF, float32(idf))
		for i := lo; i < hi; i++ {
			w := (1 + math.Log(float64(p.TF[i]))) * idf
			a.row = append(a.row, int32(p.Doc[i]))
			a.val = append(a.val, w)
			rowNorm[p.Doc[i]] += w * w
		}
		a.cols++
		a.ptr = append(a.ptr, len(a.row))
	}
	for i, r := range a.row {
		a.val[i] /= math.Sqrt(rowNorm[r])
	}
	return a
}

// mulDense returns A·B (B is cols×l).
func (a *csc) mulDense(b *mat.Dense) *mat.Dense {
	_, l := b.Dims()
	out := mat.NewDense(a.rows, l, nil)
	od := out.RawMatrix().Data
	for c := 0; c < a.cols; c++ {
		br := b.RawRowView(c)
		for i := a.ptr[c]; i < a.ptr[c+1]; i++ {
			r, v := int(a.row[i]), a.val[i]
			orow := od[r*l : r*l+l]
			for j, x := range br {
				orow[j] += v * x
			}
		}
	}
	return out
}

// tmulDense returns Aᵀ·B (B is rows×l).
func (a *csc) tmulDense(b *mat.Dense) *mat.Dense {
	_, l := b.Dims()
	out := mat.NewDense(a.cols, l, nil)
	for c := 0; c < a.cols; c++ {
		orow := out.RawRowView(c)
		for i := a.ptr[c]; i < a.ptr[c+1]; i++ {
			br, v := b.RawRowView(int(a.row[i])), a.val[i]
			for j, x := range br {
				orow[j] += v * x
			}
		}
	}
	return out
}

// orthonormalize returns the thin Q factor of y (Householder QR through
// LAPACK's geqrf + orgqr, which never forms the full square Q).
func orthonormalize(y *mat.Dense) *mat.Dense {
	q := mat.DenseCopyOf(y)
	a := q.RawMatrix()
	tau := make([]float64, min(a.Rows, a.Cols))
	work := []float64{0}
	lapack64.Geqrf(a, tau, work, -1)
	lapack64.Orgqr(a, tau, work, -1)
	work = make([]float64, max(int(work[0]), a.Cols))
	lapack64.Geqrf(a, tau, work, len(work))
	lapack64.Orgqr(a, tau, work, len(work))
	return q
}

// randomizedSVD returns the top-k right singular vectors of a, scaled so
// that x·V equals the projection scikit-learn's TruncatedSVD.transform gives.
func randomizedSVD(ctx context.Context, a *csc, k int, o LSAOptions) ([]float32, error) {
	l := min(k+o.Oversample, a.rows, a.cols)
	rng := rand.New(rand.NewPCG(o.Seed, 0x1ea5))
	omega := mat.NewDense(a.cols, l, nil)
	for i := range omega.RawMatrix().Data {
		omega.RawMatrix().Data[i] = rng.NormFloat64()
	}
	q := orthonormalize(a.mulDense(omega))
	for it := 0; it < o.PowerIters; it++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		z := orthonormalize(a.tmulDense(q))
		q = orthonormalize(a.mulDense(z))
	}
	bt := a.tmulDense(q) // Bᵀ = Aᵀ Q, cols×l
	var bbt mat.SymDense
	bbt.SymOuterK(1, bt.T()) // B Bᵀ (l×l)
	var eig mat.EigenSym
	if !eig.Factorize(&bbt, true) {
		return nil, errors.New("lsa: eigendecomposition did not converge")
	}
	var ub mat.Dense
	eig.VectorsTo(&ub)
	return rightVectors(bt, &ub, eig.Values(nil), k), nil
}

// rightVectors forms V_k = Bᵀ U_B Σ⁻¹ for the k largest eigenvalues, with a
// sign convention (largest-magnitude entry positive) so runs are identical.
func rightVectors(bt, ub *mat.Dense, vals []float64, k int) []float32 {
	order := make([]int, len(vals))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return vals[order[i]] > vals[order[j]] })
	cols, _ := bt.Dims()
	v := make([]float32, cols*k)
	col := make([]float64, cols)
	for j := 0; j < k; j++ {
		e := order[j]
		sigma := math.Sqrt(max(vals[e], 0))
		u := mat.Col(nil, e, ub)
		mat.NewVecDense(cols, col).MulVec(bt, mat.NewVecDense(len(u), u))
		scale := 0.0
		if sigma > 1e-12 {
			scale = 1 / sigma
		}
		if col[argmaxAbs(col)] < 0 {
			scale = -scale
		}
		for t := range col {
			v[t*k+j] = float32(col[t] * scale)
		}
	}
	return v
}

func argmaxAbs(x []float64) int {
	best := 0
	for i, v := range x {
		if math.Abs(v) > math.Abs(x[best]) {
			best = i
		}
	}
	return best
}

// EmbedTerms embeds one analyzed text into out (len Dims), given the
// postings' term table. It returns false when no term of the text is in the
// LSA vocabulary (out is then all zeros).
func (m *LSA) EmbedTerms(terms TermTable, words []string, out []float32) bool {
	tf := map[int32]float64{}
	for _, w := range words {
		if t := terms.Lookup(w); t >= 0 && m.Row[t] >= 0 {
			tf[m.Row[t]]++
		}
	}
	return m.embedCounts(tf, out)
}

func (m *LSA) embedCounts(tf map[int32]float64, out []float32) bool {
	clear(out)
	if len(tf) == 0 {
		return false
	}
	acc := make([]float64, m.Dims)
	rows := make([]int32, 0, len(tf))
	for r := range tf {
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i] < rows[j] }) // fixed summation order
	for _, r := range rows {
		w := (1 + math.Log(tf[r])) * float64(m.IDF[r])
		vr := m.V[int(r)*m.Dims : int(r+1)*m.Dims]
		for j, x := range vr {
			acc[j] += w * float64(x)
		}
	}
	return normalizeInto(acc, out)
}

// normalizeInto writes acc/‖acc‖ into out; the TF-IDF norm cancels out, so
// it is not applied.
func normalizeInto(acc []float64, out []float32) bool {
	var s float64
	for _, x := range acc {
		s += x * x
	}
	if s == 0 {
		return false
	}
	inv := 1 / math.Sqrt(s)
	for j, x := range acc {
		out[j] = float32(x * inv)
	}
	return true
}

// EmbedDocs embeds every document behind p from its postings (no
// re-analysis), writing n×Dims normalised rows into out.
func (m *LSA) EmbedDocs(p *Postings, out []float32) {
	n := p.NumDocs()
	acc := make([]float64, n*m.Dims)
	for t := range m.Row {
		r := m.Row[t]
		if r < 0 {
			continue
		}
		vr := m.V[int(r)*m.Dims : int(r+1)*m.Dims]
		for i := p.Ptr[t]; i < p.Ptr[t+1]; i++ {
			w := (1 + math.Log(float64(p.TF[i]))) * float64(m.IDF[r])
			row := acc[int(p.Doc[i])*m.Dims : int(p.Doc[i]+1)*m.Dims]
			for j, x := range vr {
				row[j] += w * float64(x)
			}
		}
	}
	for d := 0; d < n; d++ {
		normalizeInto(acc[d*m.Dims:(d+1)*m.Dims], out[d*m.Dims:(d+1)*m.Dims])
	}
}
