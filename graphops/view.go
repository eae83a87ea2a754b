package graphops

import "slices"

// Simplify returns the simple undirected graph of a: every row sorted, the
// parallel entries of a neighbour merged into one whose weight is their
// sum, and self-loops dropped. It is the one graph view that gleaner's
// methods and Topological Recall share, so that "degree" means the same
// everywhere: TotalDegree is the number of distinct neighbours and
// Strength the sum of the merged weights. PageRank over it equals igraph's
// on the multigraph minus the self-loops (parallel edges only ever enter a
// transition through the sum of their weights). W is nil when every
// merged weight is 1.
func Simplify(a *Adjacency) *Adjacency {
	n := a.N()
	type entry struct {
		u int32
		w float64
	}
	rows := make([][]entry, n)
	parallelFor(n, func(v int) {
		var row []entry
		for p := a.Ptr[v]; p < a.Ptr[v+1]; p++ {
			if u := a.Idx[p]; int(u) != v {
				row = append(row, entry{u, a.Weight(p)})
			}
		}
		slices.SortFunc(row, func(x, y entry) int { return int(x.u) - int(y.u) })
		out := row[:0]
		for _, e := range row {
			if k := len(out) - 1; k >= 0 && out[k].u == e.u {
				out[k].w += e.w
				continue
			}
			out = append(out, e)
		}
		rows[v] = out
	})
	s := &Adjacency{Ptr: make([]int64, n+1), Strength: make([]float64, n)}
	for v, r := range rows {
		s.Ptr[v+1] = s.Ptr[v] + int64(len(r))
	}
	s.Idx, s.W = make([]int32, s.Ptr[n]), make([]float64, s.Ptr[n])
	for v, r := range rows {
		q := s.Ptr[v]
		for i, e := range r {
			s.Idx[q+int64(i)], s.W[q+int64(i)] = e.u, e.w
			s.Strength[v] += e.w
		}
	}
	if allOnes(s.W) {
		s.W = nil
	}
	return s
}
