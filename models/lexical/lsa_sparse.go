package lexical

import (
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// csc is the TF-IDF matrix (documents × LSA terms) stored by term column,
// straight from the postings; byRow is the same matrix stored by document
// row, for products that write one document's row at a time.
type csc struct {
	rows, cols int
	ptr        []int
	row        []int32
	val        []float64
	byRow      *csr
}

// csr is a sparse matrix stored by row; each row's columns ascend.
type csr struct {
	ptr []int
	col []int32
	val []float64
}

// transpose returns a's entries by row. Columns are visited in ascending
// order, so each row lists its columns ascending: a row-wise product then
// sums in the same order as a column-wise one.
func (a *csc) transpose() *csr {
	t := &csr{ptr: make([]int, a.rows+1), col: make([]int32, len(a.row)), val: make([]float64, len(a.row))}
	for _, r := range a.row {
		t.ptr[r+1]++
	}
	for r := 0; r < a.rows; r++ {
		t.ptr[r+1] += t.ptr[r]
	}
	fill := append([]int(nil), t.ptr[:a.rows]...)
	for c := 0; c < a.cols; c++ {
		for i := a.ptr[c]; i < a.ptr[c+1]; i++ {
			r := a.row[i]
			t.col[fill[r]], t.val[fill[r]] = int32(c), a.val[i]
			fill[r]++
		}
	}
	return t
}

// productChunk is how many output rows one goroutine takes at a time.
const productChunk = 256

// mulDense writes A·B into out (B is cols×l, out rows×l). Each output row
// is one document's, summed over its terms in ascending order, whatever the
// parallelism.
func (a *csc) mulDense(b, out *mat.Dense) {
	if a.byRow == nil {
		a.byRow = a.transpose()
	}
	t := a.byRow
	_, l := b.Dims()
	od := out.RawMatrix().Data
	forChunks(a.rows, productChunk, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			orow := od[r*l : r*l+l]
			clear(orow)
			for i := t.ptr[r]; i < t.ptr[r+1]; i++ {
				axpy(t.val[i], b.RawRowView(int(t.col[i])), orow)
			}
		}
	})
}

// tmulDense writes Aᵀ·B into out (B is rows×l, out cols×l). Each output row
// is one term's, summed over its documents in ascending order.
func (a *csc) tmulDense(b, out *mat.Dense) {
	forChunks(a.cols, productChunk, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			orow := out.RawRowView(c)
			clear(orow)
			for i := a.ptr[c]; i < a.ptr[c+1]; i++ {
				axpy(a.val[i], b.RawRowView(int(a.row[i])), orow)
			}
		}
	})
}

// axpy adds v·x to y (gonum's assembly loop: 2× the plain Go loop here).
func axpy(v float64, x, y []float64) { floats.AddScaled(y, v, x) }
