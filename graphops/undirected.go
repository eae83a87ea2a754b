package graphops

import (
	"runtime"
	"sync"
)

// Adjacency is an undirected, weighted view of a Graph: every directed edge
// u→v appears in both u's and v's rows, so parallel edges add up and a
// self-loop counts twice (igraph's undirected semantics). Strength[v] is the
// sum of v's row weights; a vertex with Strength 0 is dangling. W is nil
// when every weight is 1, which lets the iterations skip reading it.
type Adjacency struct {
	Ptr      []int64
	Idx      []int32
	W        []float64
	Strength []float64
	pushPool sync.Pool // *pushWork scratch for LocalPPR
}

// N is the number of vertices.
func (a *Adjacency) N() int { return len(a.Ptr) - 1 }

// Undirected builds the undirected view of g over the edges whose relation
// id keep accepts (nil keeps all), with unit weights when weighted is false.
// Rows are filled in parallel.
func Undirected(g *Graph, weighted bool, keep func(rel int32) bool) *Adjacency {
	n := g.Out.N()
	a := &Adjacency{Ptr: make([]int64, n+1), Strength: make([]float64, n)}
	take := func(c *CSR, p int64) bool { return keep == nil || c.Rel == nil || keep(c.Rel[p]) }
	parallelFor(n, func(v int) {
		cnt := 0
		for _, c := range []*CSR{&g.Out, &g.In} {
			for p := c.Ptr[v]; p < c.Ptr[v+1]; p++ {
				if take(c, p) {
					cnt++
				}
			}
		}
		a.Ptr[v+1] = int64(cnt)
	})
	for v := 0; v < n; v++ {
		a.Ptr[v+1] += a.Ptr[v]
	}
	a.Idx, a.W = make([]int32, a.Ptr[n]), make([]float64, a.Ptr[n])
	parallelFor(n, func(v int) {
		q := a.Ptr[v]
		for _, c := range []*CSR{&g.Out, &g.In} {
			for p := c.Ptr[v]; p < c.Ptr[v+1]; p++ {
				if !take(c, p) {
					continue
				}
				w := 1.0
				if weighted {
					w = float64(c.W[p])
				}
				a.Idx[q], a.W[q] = c.Idx[p], w
				a.Strength[v] += w
				q++
			}
		}
	})
	if allOnes(a.W) {
		a.W = nil
	}
	return a
}

// Weight returns the weight of entry p.
func (a *Adjacency) Weight(p int64) float64 {
	if a.W == nil {
		return 1
	}
	return a.W[p]
}

func allOnes(w []float64) bool {
	for _, x := range w {
		if x != 1 {
			return false
		}
	}
	return true
}

// parallelFor calls fn(i) for i in [0, n) on all cores, in contiguous
// chunks (each index handled by exactly one goroutine).
func parallelFor(n int, fn func(i int)) {
	w := min(runtime.GOMAXPROCS(0), max(1, n/4096))
	var wg sync.WaitGroup
	for k := 0; k < w; k++ {
		lo, hi := k*n/w, (k+1)*n/w
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// EachUndirected calls fn for every neighbour of v (this view is already
// undirected), so an Adjacency can stand where a *Graph is read undirected.
func (a *Adjacency) EachUndirected(v int, fn func(u int32)) {
	for p := a.Ptr[v]; p < a.Ptr[v+1]; p++ {
		fn(a.Idx[p])
	}
}

// TotalDegree is v's number of incident edges in this view.
func (a *Adjacency) TotalDegree(v int) int { return int(a.Ptr[v+1] - a.Ptr[v]) }

// Induced is the subgraph of a on the vertices keep accepts: the same
// vertex numbering, every edge with an end outside removed and strengths
// recomputed, so a walk on it equals one on the graph without those
// vertices (they are left isolated).
func (a *Adjacency) Induced(keep func(int32) bool) *Adjacency {
	n := a.N()
	out := &Adjacency{Ptr: make([]int64, n+1), Strength: make([]float64, n)}
	for v := 0; v < n; v++ {
		cnt := int64(0)
		if keep(int32(v)) {
			for p := a.Ptr[v]; p < a.Ptr[v+1]; p++ {
				if keep(a.Idx[p]) {
					cnt++
				}
			}
		}
		out.Ptr[v+1] = out.Ptr[v] + cnt
	}
	out.Idx = make([]int32, out.Ptr[n])
	if a.W != nil {
		out.W = make([]float64, out.Ptr[n])
	}
	for v := 0; v < n; v++ {
		q := out.Ptr[v]
		if !keep(int32(v)) {
			continue
		}
		for p := a.Ptr[v]; p < a.Ptr[v+1]; p++ {
			if !keep(a.Idx[p]) {
				continue
			}
			w := a.Weight(p)
			out.Idx[q] = a.Idx[p]
			if out.W != nil {
				out.W[q] = w
			}
			out.Strength[v] += w
			q++
		}
	}
	return out
}
