package graphops

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// KHopFilterOptions bound SeedER's candidate graph (docs/methods.md §3.1
// stage 2): Quotas[h] nodes are added at hop h+1, Cap bounds all kept
// nodes, seeds included.
type KHopFilterOptions struct {
	Quotas []int
	Cap    int
}

// DefaultKHopFilterOptions are the paper's MiniLM PRIME reference: hop
// quotas 200, 200, 100 and at most 500 nodes.
func DefaultKHopFilterOptions() KHopFilterOptions {
	return KHopFilterOptions{Quotas: []int{200, 200, 100}, Cap: 500}
}

// Validate checks the options.
func (o KHopFilterOptions) Validate() error {
	if len(o.Quotas) == 0 || o.Cap < 1 {
		return fmt.Errorf("graphops: k-hop filter needs at least one hop quota and a cap ≥ 1, got %v and %d", o.Quotas, o.Cap)
	}
	for _, q := range o.Quotas {
		if q < 0 {
			return fmt.Errorf("graphops: k-hop quotas must be ≥ 0, got %v", o.Quotas)
		}
	}
	return nil
}

// KHopScores are the query similarities the filter combines: Node(u) =
// sim(q, u), Rel(r) = sim(q, relation r), and Source(v, hop) the score a
// frontier node v passes on at that hop (sim(q, v); a linked seed may pass
// 1 at hop 1).
type KHopScores struct {
	Edge func(r int32) bool // which edges to follow, by relation (nil: all)
	Node func(u int32) float64
	Rel  func(r int32) float64
	// RelHop, when set, replaces Rel with a score that knows the hop
	// (1-based) and whether the edge is walked against its direction (a
	// learned reading of the question: docs/methods.md §3.5).
	RelHop func(r int32, inverse bool, hop int) float64
	Source func(v int32, hop int) float64
	// Keep, when set, is the nodes the expansion may reach (a query's
	// filter): the others are not there at all.
	Keep func(u int32) bool
	// Mass, when set, is the answer mass a reading of the question brings
	// node u at a hop (1-based): a hop's candidates are then ranked by it
	// first, by the score above among equal masses (docs/methods.md §3.5).
	Mass func(u int32, hop int) float64
}

// KHopFilter expands seeds hop by hop over g's edges in both directions:
// at hop h every unseen neighbour u of the frontier F scores
// ⅓·sim(q,u) + max over edges v–u (v ∈ F, relation r) of
// ⅓·source(v) + ⅓·sim(q,r) — the best reading of SeedER's filter
// (methods.md §3.3) — and the Quotas[h−1] best (by Mass first when it is
// set; ties to the lower id) join and form the next frontier, until the
// quotas, the frontier or the cap run out. It returns the kept nodes (seeds first, then hop by hop,
// best first) and each one's hop (0 for seeds). Over a graph without
// relations, Rel is called with −1.
func KHopFilter(ctx context.Context, g *Graph, seeds []int32, o KHopFilterOptions, s KHopScores) ([]int32, []int, error) {
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	kept := map[int32]bool{}
	var nodes []int32
	var hops []int
	for _, v := range seeds {
		if !kept[v] && len(nodes) < o.Cap {
			kept[v] = true
			nodes, hops = append(nodes, v), append(hops, 0)
		}
	}
	frontier := slices.Clone(nodes)
	for h, quota := range o.Quotas {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		room := min(quota, o.Cap-len(nodes))
		if room <= 0 || len(frontier) == 0 {
			break
		}
		best := map[int32]float64{} // u → best source + relation term
		for _, v := range frontier {
			src := s.Source(v, h+1) / 3
			for _, dir := range []*CSR{&g.Out, &g.In} {
				for p := dir.Ptr[v]; p < dir.Ptr[v+1]; p++ {
					u := dir.Idx[p]
					if kept[u] || s.Keep != nil && !s.Keep(u) {
						continue
					}
					r := int32(-1) // a graph without relations
					if dir.Rel != nil {
						r = dir.Rel[p]
					}
					if s.Edge != nil && !s.Edge(r) {
						continue
					}
					term := src + s.relScore(r, dir == &g.In, h+1)/3
					if b, ok := best[u]; !ok || term > b {
						best[u] = term
					}
				}
			}
		}
		type cand struct {
			u           int32
			mass, score float64
		}
		cands := make([]cand, 0, len(best))
		for u, b := range best {
			c := cand{u: u, score: s.Node(u)/3 + b}
			if s.Mass != nil {
				c.mass = s.Mass(u, h+1)
			}
			cands = append(cands, c)
		}
		slices.SortFunc(cands, func(a, b cand) int {
			return cmp.Or(cmp.Compare(b.mass, a.mass), cmp.Compare(b.score, a.score), cmp.Compare(a.u, b.u))
		})
		frontier = frontier[:0]
		for _, c := range cands[:min(room, len(cands))] {
			kept[c.u] = true
			nodes, hops = append(nodes, c.u), append(hops, h+1)
			frontier = append(frontier, c.u)
		}
	}
	return nodes, hops, nil
}

// relScore is the relation term: RelHop when set, else Rel.
func (s *KHopScores) relScore(r int32, inverse bool, hop int) float64 {
	if s.RelHop != nil {
		return s.RelHop(r, inverse, hop)
	}
	return s.Rel(r)
}
