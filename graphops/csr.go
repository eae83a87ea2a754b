// Package graphops holds gleaner's graph operators over compressed sparse
// row (CSR) graphs whose vertices are the index's nodes.
package graphops

import (
	"fmt"
	"slices"
)

// CSR is one direction of a graph: the neighbours of v are
// Idx[Ptr[v]:Ptr[v+1]] with weights W and relation ids Rel at the same
// positions (Rel may be nil when the graph has no relation types).
type CSR struct {
	Ptr []int64
	Idx []int32
	W   []float32
	Rel []int32
}

// N is the number of vertices.
func (g *CSR) N() int { return len(g.Ptr) - 1 }

// Neighbors returns v's neighbour ids (aliasing g).
func (g *CSR) Neighbors(v int) []int32 { return g.Idx[g.Ptr[v]:g.Ptr[v+1]] }

// Degree is v's number of edges in this direction.
func (g *CSR) Degree(v int) int { return int(g.Ptr[v+1] - g.Ptr[v]) }

// Validate checks a CSR read from disk.
func (g *CSR) Validate(n int) error {
	if len(g.Ptr) != n+1 || g.Ptr[0] != 0 || g.Ptr[n] != int64(len(g.Idx)) {
		return fmt.Errorf("graphops: CSR pointers do not cover %d vertices and %d edges", n, len(g.Idx))
	}
	if len(g.W) != len(g.Idx) || (g.Rel != nil && len(g.Rel) != len(g.Idx)) {
		return fmt.Errorf("graphops: CSR arrays have different lengths")
	}
	for v := 0; v < n; v++ {
		if g.Ptr[v] > g.Ptr[v+1] {
			return fmt.Errorf("graphops: CSR pointers decrease at vertex %d", v)
		}
	}
	for i, u := range g.Idx {
		if u < 0 || int(u) >= n {
			return fmt.Errorf("graphops: CSR entry %d names vertex %d of %d", i, u, n)
		}
	}
	return nil
}

// Edge is an edge between dense vertex ids.
type Edge struct {
	Src, Dst int32
	W        float32
	Rel      int32
}

// Graph is a directed graph with both directions materialised. Undirected
// methods use Out and In together; the total degree of v is
// Out.Degree(v)+In.Degree(v).
type Graph struct {
	Out, In CSR
}

// TotalDegree is v's number of incident edges counting both directions.
func (g *Graph) TotalDegree(v int) int { return g.Out.Degree(v) + g.In.Degree(v) }

// EachUndirected calls fn for every neighbour of v in either direction.
func (g *Graph) EachUndirected(v int, fn func(u int32)) {
	for _, u := range g.Out.Neighbors(v) {
		fn(u)
	}
	for _, u := range g.In.Neighbors(v) {
		fn(u)
	}
}

// Build makes both directions of the graph over n vertices, sorting rows in
// parallel. Within a row, neighbours are sorted by id (then relation), so
// output is deterministic.
func Build(n int, edges []Edge, withRel bool) (*Graph, error) {
	for i, e := range edges {
		if e.Src < 0 || int(e.Src) >= n || e.Dst < 0 || int(e.Dst) >= n {
			return nil, fmt.Errorf("graphops: edge %d (%d→%d) outside %d vertices", i, e.Src, e.Dst, n)
		}
	}
	g := &Graph{}
	g.Out = buildDir(n, edges, withRel, func(e Edge) (int32, int32) { return e.Src, e.Dst })
	g.In = buildDir(n, edges, withRel, func(e Edge) (int32, int32) { return e.Dst, e.Src })
	return g, nil
}

func buildDir(n int, edges []Edge, withRel bool, ends func(Edge) (int32, int32)) CSR {
	c := CSR{Ptr: make([]int64, n+1), Idx: make([]int32, len(edges)), W: make([]float32, len(edges))}
	if withRel {
		c.Rel = make([]int32, len(edges))
	}
	for _, e := range edges {
		s, _ := ends(e)
		c.Ptr[s+1]++
	}
	for v := 0; v < n; v++ {
		c.Ptr[v+1] += c.Ptr[v]
	}
	order := make([]int, len(edges))
	fill := slices.Clone(c.Ptr[:n])
	for i, e := range edges {
		s, _ := ends(e)
		order[fill[s]] = i
		fill[s]++
	}
	parallelFor(n, func(v int) { // rows are disjoint: sort them in parallel
		row := order[c.Ptr[v]:c.Ptr[v+1]]
		slices.SortStableFunc(row, func(a, b int) int {
			_, da := ends(edges[a])
			_, db := ends(edges[b])
			if da != db {
				return int(da - db)
			}
			return int(edges[a].Rel - edges[b].Rel)
		})
	})
	for p, i := range order {
		_, d := ends(edges[i])
		c.Idx[p], c.W[p] = d, edges[i].W
		if withRel {
			c.Rel[p] = edges[i].Rel
		}
	}
	return c
}
