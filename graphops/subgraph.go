package graphops

import "slices"

// Subgraph is the graph induced by a node subset, in local ids (position in
// Nodes): an undirected simple adjacency (one entry per neighbouring pair,
// no self-loops) and each node's total degree in the full graph, as
// GRanker's smoothing needs (engine.SmoothOp).
type Subgraph struct {
	Nodes []int32
	Ptr   []int64
	Idx   []int32
	Deg   []float32
}

// Induced extracts the subgraph of g induced by nodes (duplicates are
// ignored after their first occurrence), with total degrees.
func Induced(g *Graph, nodes []int32) *Subgraph {
	return induced(nodes, func(v int32, fn func(u int32)) { g.EachUndirected(int(v), fn) },
		func(v int32) float32 { return float32(g.TotalDegree(int(v))) })
}

// InducedAdj is Induced over an undirected adjacency view (e.g. one edge
// kind): local simple adjacency, and each node's degree in that view.
func InducedAdj(a *Adjacency, nodes []int32) *Subgraph {
	return induced(nodes, func(v int32, fn func(u int32)) {
		for p := a.Ptr[v]; p < a.Ptr[v+1]; p++ {
			fn(a.Idx[p])
		}
	}, func(v int32) float32 { return float32(a.Ptr[v+1] - a.Ptr[v]) })
}

func induced(nodes []int32, neighbours func(v int32, fn func(u int32)), degree func(v int32) float32) *Subgraph {
	local := make(map[int32]int32, len(nodes))
	s := &Subgraph{}
	for _, v := range nodes {
		if _, dup := local[v]; !dup {
			local[v] = int32(len(s.Nodes))
			s.Nodes = append(s.Nodes, v)
		}
	}
	s.Ptr = make([]int64, 1, len(s.Nodes)+1)
	var row []int32
	for _, v := range s.Nodes {
		row = row[:0]
		neighbours(v, func(u int32) {
			if j, ok := local[u]; ok && u != v {
				row = append(row, j)
			}
		})
		slices.Sort(row)
		row = slices.Compact(row)
		s.Idx = append(s.Idx, row...)
		s.Ptr = append(s.Ptr, int64(len(s.Idx)))
		s.Deg = append(s.Deg, degree(v))
	}
	return s
}
