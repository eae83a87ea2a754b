package graphops

import "sort"

// RowsCSR packs rows of column ids into a CSR without weights, each row
// sorted and deduplicated.
func RowsCSR(rows [][]int32) CSR {
	c := CSR{Ptr: make([]int64, len(rows)+1), Idx: []int32{}}
	for i, r := range rows {
		r = append([]int32(nil), r...)
		sort.Slice(r, func(a, b int) bool { return r[a] < r[b] })
		for k, x := range r {
			if k == 0 || x != r[k-1] {
				c.Idx = append(c.Idx, x)
			}
		}
		c.Ptr[i+1] = int64(len(c.Idx))
	}
	return c
}

// Transpose returns the unweighted transpose of c over cols columns; its
// rows come out sorted when c's row ids increase, which they do.
func Transpose(c CSR, cols int) CSR {
	t := CSR{Ptr: make([]int64, cols+1), Idx: make([]int32, len(c.Idx))}
	for _, j := range c.Idx {
		t.Ptr[j+1]++
	}
	for j := 0; j < cols; j++ {
		t.Ptr[j+1] += t.Ptr[j]
	}
	fill := append([]int64(nil), t.Ptr[:cols]...)
	for i := 0; i < c.N(); i++ {
		for _, j := range c.Neighbors(i) {
			t.Idx[fill[j]] = int32(i)
			fill[j]++
		}
	}
	return t
}

// SortRows sorts every row of c by column, carrying the weights along.
func SortRows(c CSR) CSR {
	for i := 0; i < c.N(); i++ {
		lo, hi := c.Ptr[i], c.Ptr[i+1]
		idx, w := c.Idx[lo:hi], c.W[lo:hi]
		sort.Sort(rowSorter{idx, w})
	}
	return c
}

type rowSorter struct {
	idx []int32
	w   []float32
}

func (r rowSorter) Len() int           { return len(r.idx) }
func (r rowSorter) Less(a, b int) bool { return r.idx[a] < r.idx[b] }
func (r rowSorter) Swap(a, b int) {
	r.idx[a], r.idx[b] = r.idx[b], r.idx[a]
	r.w[a], r.w[b] = r.w[b], r.w[a]
}
