package eval

import "math"

// Graph is what Topological Recall needs of a graph: undirected adjacency
// and total degrees over dense vertex ids. *graphops.Graph satisfies it.
type Graph interface {
	EachUndirected(v int, fn func(u int32))
	TotalDegree(v int) int
}

// TopoResult is the Topological Recall of one ranking and its parts:
// TR = Recall + MissTR.
type TopoResult struct {
	TR, Recall, MissTR float64
}

// TopologicalRecall implements FastInsight's metric (paper §4.3.2):
//
//	TR = mean over gold nodes t of 1/(1+u(t)),
//	u(t) = min over retrieved seeds s of Σ ln(1+deg(n)) over the nodes n of
//	       the shortest path from s to t, t itself excluded.
//
// A retrieved gold node has u = 0 and contributes 1 (the Recall part); the
// rest is MissTR. Paths are hop-shortest over undirected edges, degrees are
// total degrees in the full graph; when several hop-shortest paths join s
// and t, the cheapest is taken. An unreachable gold node contributes 0.
// maxHops > 0 bounds the search (0: unbounded).
func TopologicalRecall(g Graph, n int, retrieved, gold []int32, maxHops int) TopoResult {
	if len(gold) == 0 {
		return TopoResult{}
	}
	isSeed := map[int32]bool{}
	for _, s := range retrieved {
		isSeed[s] = true
	}
	best := map[int32]float64{}
	var missing []int32
	for _, t := range gold {
		if !isSeed[t] {
			best[t] = math.Inf(1)
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		b := newBFS(n)
		for _, s := range retrieved {
			b.costs(g, s, best, maxHops)
		}
	}
	var res TopoResult
	for _, t := range gold {
		if isSeed[t] {
			res.Recall++
		} else if u := best[t]; !math.IsInf(u, 1) {
			res.MissTR += 1 / (1 + u)
		}
	}
	res.Recall /= float64(len(gold))
	res.MissTR /= float64(len(gold))
	res.TR = res.Recall + res.MissTR
	return res
}

// bfs holds reusable per-vertex state for layered searches.
type bfs struct {
	hop     []int32
	cost    []float64
	touched []int32
}

func newBFS(n int) *bfs {
	b := &bfs{hop: make([]int32, n), cost: make([]float64, n)}
	for i := range b.hop {
		b.hop[i] = -1
	}
	return b
}

// costs runs one layered BFS from s and lowers best[t] for every target t
// it reaches. Within a layer each vertex takes the cheapest predecessor.
func (b *bfs) costs(g Graph, s int32, best map[int32]float64, maxHops int) {
	defer b.reset()
	b.visit(s, 0, 0)
	frontier, left := []int32{s}, len(best)
	for h := int32(1); len(frontier) > 0 && left > 0 && (maxHops <= 0 || int(h) <= maxHops); h++ {
		var next []int32
		for _, v := range frontier {
			step := b.cost[v] + math.Log1p(float64(g.TotalDegree(int(v))))
			g.EachUndirected(int(v), func(u int32) {
				switch {
				case b.hop[u] < 0:
					b.visit(u, h, step)
					next = append(next, u)
				case b.hop[u] == h && step < b.cost[u]:
					b.cost[u] = step
				}
			})
		}
		for _, u := range next {
			if c, ok := best[u]; ok {
				left--
				best[u] = min(c, b.cost[u])
			}
		}
		frontier = next
	}
}

func (b *bfs) visit(v, h int32, c float64) {
	b.hop[v], b.cost[v] = h, c
	b.touched = append(b.touched, v)
}

func (b *bfs) reset() {
	for _, v := range b.touched {
		b.hop[v] = -1
	}
	b.touched = b.touched[:0]
}
