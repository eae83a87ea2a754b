package graphops

import (
	"context"
	"fmt"
)

// BFS holds hop distances and one shortest-path parent per vertex from a
// set of sources over the undirected adjacency. Unreached vertices have
// Dist −1.
type BFS struct {
	Dist   []int32
	Parent []int32
}

// ShortestPaths runs a multi-source BFS, stopping after maxHops layers
// (0: no limit). Parents are the first discoverer in source order, then
// neighbour order, so paths are deterministic. Cancellation is checked
// once per layer.
func ShortestPaths(ctx context.Context, a *Adjacency, sources []int32, maxHops int) (*BFS, error) {
	n := a.N()
	b := &BFS{Dist: make([]int32, n), Parent: make([]int32, n)}
	for i := range b.Dist {
		b.Dist[i], b.Parent[i] = -1, -1
	}
	var frontier []int32
	for _, s := range sources {
		if s < 0 || int(s) >= n {
			return nil, fmt.Errorf("graphops: source %d outside %d vertices", s, n)
		}
		if b.Dist[s] < 0 {
			b.Dist[s] = 0
			frontier = append(frontier, s)
		}
	}
	for h := int32(1); len(frontier) > 0 && (maxHops <= 0 || int(h) <= maxHops); h++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var next []int32
		for _, u := range frontier {
			for p := a.Ptr[u]; p < a.Ptr[u+1]; p++ {
				if v := a.Idx[p]; b.Dist[v] < 0 {
					b.Dist[v], b.Parent[v] = h, u
					next = append(next, v)
				}
			}
		}
		frontier = next
	}
	return b, nil
}

// Path returns the vertices from a source to v (inclusive), or nil when v
// was not reached.
func (b *BFS) Path(v int32) []int32 {
	if b.Dist[v] < 0 {
		return nil
	}
	path := make([]int32, b.Dist[v]+1)
	for i := len(path) - 1; i >= 0; i-- {
		path[i] = v
		v = b.Parent[v]
	}
	return path
}
