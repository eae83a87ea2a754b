package graphops

import (
	"context"
	"fmt"
	"sort"
)

// KHopOptions bounds an expansion.
type KHopOptions struct {
	Hops      int // maximum distance from the seeds (≥ 0)
	PerHopCap int // at most this many new vertices per hop (0: no cap)
	Budget    int // at most this many vertices in total, seeds included (0: no cap)
	// Score, when set, ranks a hop's candidates (higher first, ties by
	// vertex id) before the per-hop cap and the budget cut; otherwise
	// candidates keep discovery order (seed order, then neighbour order).
	Score func(v int32) float64
}

// KHop expands seeds breadth-first over the undirected adjacency and
// returns the vertices reached with their hop distance, seeds first, then
// hop by hop. Cancellation is checked once per hop.
func KHop(ctx context.Context, a *Adjacency, seeds []int32, o KHopOptions) ([]int32, []int32, error) {
	if o.Hops < 0 || o.PerHopCap < 0 || o.Budget < 0 {
		return nil, nil, fmt.Errorf("graphops: k-hop options must not be negative: %+v", o)
	}
	dist := map[int32]int32{}
	var nodes, hops []int32
	for _, s := range seeds {
		if s < 0 || int(s) >= a.N() {
			return nil, nil, fmt.Errorf("graphops: seed %d outside %d vertices", s, a.N())
		}
		if _, dup := dist[s]; !dup && (o.Budget == 0 || len(nodes) < o.Budget) {
			dist[s] = 0
			nodes, hops = append(nodes, s), append(hops, 0)
		}
	}
	frontier := nodes
	for h := int32(1); int(h) <= o.Hops && len(frontier) > 0; h++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		next := candidates(a, frontier, dist)
		next = o.cut(next, len(nodes))
		for _, v := range next {
			dist[v] = h
			nodes, hops = append(nodes, v), append(hops, h)
		}
		frontier = next
	}
	return nodes, hops, nil
}

// candidates lists unvisited neighbours of the frontier, each once.
func candidates(a *Adjacency, frontier []int32, dist map[int32]int32) []int32 {
	seen := map[int32]bool{}
	var out []int32
	for _, u := range frontier {
		for p := a.Ptr[u]; p < a.Ptr[u+1]; p++ {
			v := a.Idx[p]
			if _, done := dist[v]; !done && !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	return out
}

// cut applies the score order, the per-hop cap and the remaining budget.
func (o KHopOptions) cut(next []int32, have int) []int32 {
	if o.Score != nil {
		sort.SliceStable(next, func(i, j int) bool {
			si, sj := o.Score(next[i]), o.Score(next[j])
			if si != sj {
				return si > sj
			}
			return next[i] < next[j]
		})
	}
	if o.PerHopCap > 0 && len(next) > o.PerHopCap {
		next = next[:o.PerHopCap]
	}
	if o.Budget > 0 && have+len(next) > o.Budget {
		next = next[:max(0, o.Budget-have)]
	}
	return next
}
