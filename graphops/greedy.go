package graphops

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"slices"
)

// GreedyOptions bound FuseRAG's greedy evidence retrieval (docs/methods.md
// §4, stage 1).
type GreedyOptions struct {
	// Budget is K, the most nodes selected, start nodes included (≥ 1).
	Budget int
	// Lambda weighs novelty: an action's gain is rel − Lambda·max sim to
	// the selected nodes (≥ 0; 0 is pure relevance).
	Lambda float64
	// Stop is the STOP action's value: expansion ends when the best gain
	// is below it. −Inf (or any value below every possible gain) always
	// fills the budget.
	Stop float64
}

// Validate checks the options.
func (o GreedyOptions) Validate() error {
	switch {
	case o.Budget < 1:
		return fmt.Errorf("graphops: greedy evidence budget must be ≥ 1, got %d", o.Budget)
	case !(o.Lambda >= 0) || math.IsInf(o.Lambda, 1):
		return fmt.Errorf("graphops: greedy evidence lambda must be finite and ≥ 0, got %v", o.Lambda)
	case math.IsNaN(o.Stop):
		return fmt.Errorf("graphops: greedy evidence stop threshold is NaN")
	}
	return nil
}

// GreedyScores are the two similarities the gain combines. Rel(u, v, p) is
// the query relevance of the action "add v along the edge at position p of
// u's row" (so a caller over a typed graph can weigh the relation); Sim(u,
// v) is the similarity of two nodes (for novelty).
type GreedyScores struct {
	Rel func(u, v int32, p int64) float64
	Sim func(u, v int32) float64
	// Sims, when set, is Sim for many nodes against one: it sets out[i]
	// to Sim(us[i], v), equal to it bit for bit. The walk then scores the
	// neighbours a selected node brings to the frontier in one call.
	Sims func(us []int32, v int32, out []float64)
}

// Evidence is the retrieved evidence set B_q with its graph G_q.
type Evidence struct {
	Nodes []int32   // start nodes first, then in selection order
	Gains []float64 // each selected node's gain (start nodes: NaN)
	Via   []int32   // the selected node each one was reached from (−1 for start nodes)
	Graph *Subgraph // the graph induced by Nodes over the adjacency (E_q)
}

// frontierEntry is the best action reaching one unselected node, with
// what is known of its novelty: nov is the max Sim to a subset of the
// selected nodes that holds the first novAt of them and the node it was
// first reached from, so rel − λ·nov bounds its gain from above (novelty
// only grows), and is its gain once novAt covers every selected node.
type frontierEntry struct {
	rel   float64 // best relevance over edges from the selected set
	from  int32
	nov   float64
	novAt int
}

// GreedyEvidence grows the selected set V from the start nodes one node at
// a time. The actions are the edges u–v with u ∈ V and v ∉ V; an action's
// gain is Rel(u, v, p) − λ·max_{w∈V} Sim(v, w) (the MMR reading of
// FuseRAG's s_t, docs/methods.md §7.1); the best action (ties to the lower node
// id) adds v, until the budget is spent, no edge leaves V, or the best gain
// is below Stop. Duplicate or out-of-range start nodes are errors, and so is
// a NaN relevance of a node's first edge from the selected set or a NaN gain
// the walk reads (a NaN on a later edge is not a better action, as before);
// start nodes beyond the budget are dropped.
//
// The selection is lazy (as CELF's): a node's novelty is first bounded by
// its similarity to the node it was reached from, and completed only when
// its bound is the best in the frontier. A hub's neighbours cost one Sim
// each, not one per selected node and step, and the result is the eager
// selection's.
func GreedyEvidence(ctx context.Context, a *Adjacency, start []int32, o GreedyOptions, s GreedyScores) (*Evidence, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if s.Rel == nil || (s.Sim == nil && o.Lambda != 0) {
		return nil, fmt.Errorf("graphops: greedy evidence needs Rel (and Sim when lambda > 0)")
	}
	seen := make(map[int32]bool, len(start))
	for _, v := range start { // every start node is checked, kept or not
		if v < 0 || int(v) >= a.N() {
			return nil, fmt.Errorf("graphops: greedy evidence start node %d is outside the graph's %d nodes", v, a.N())
		}
		if seen[v] {
			return nil, fmt.Errorf("graphops: greedy evidence start node %d is given twice", v)
		}
		seen[v] = true
	}
	g := &greedy{a: a, o: o, s: s, ev: &Evidence{}, selected: make(map[int32]bool, min(o.Budget, a.N())), // a budget is not a size: it may exceed the graph
		frontier: map[int32]*frontierEntry{}}
	for _, v := range start[:min(len(start), o.Budget)] {
		g.add(v, -1, math.NaN())
	}
	for len(g.ev.Nodes) < o.Budget {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if g.err != nil {
			return nil, g.err
		}
		best, gain, ok := g.next()
		if g.err != nil {
			return nil, g.err
		}
		if !ok || gain < o.Stop {
			break
		}
		g.add(best, g.frontier[best].from, gain)
	}
	g.ev.Graph = InducedAdj(a, g.ev.Nodes)
	return g.ev, nil
}

// greedy is one GreedyEvidence walk.
type greedy struct {
	a        *Adjacency
	o        GreedyOptions
	s        GreedyScores
	ev       *Evidence
	selected map[int32]bool
	frontier map[int32]*frontierEntry
	bounds   gainHeap
	err      error // the first NaN read
	// add's scratch: the offers of one selected node's row, in row order,
	// and the nodes it brings to the frontier with their entries.
	offers     []pendingOffer
	fresh      []int32
	freshEntry []*frontierEntry
	sims       []float64
}

// pendingOffer is an offer of node u's bound for relevance rel, made once
// the novelties of add's row are known.
type pendingOffer struct {
	u   int32
	f   *frontierEntry
	rel float64
}

// add selects v and offers its unselected neighbours to the frontier. A
// neighbour new to the frontier starts with its similarity to v as its
// novelty; those are scored together (novelties) before the row's bounds
// are offered, in row order, as each would have been on its own.
func (g *greedy) add(v, from int32, gain float64) {
	g.selected[v] = true
	delete(g.frontier, v)
	g.ev.Nodes, g.ev.Gains, g.ev.Via = append(g.ev.Nodes, v), append(g.ev.Gains, gain), append(g.ev.Via, from)
	g.offers, g.fresh, g.freshEntry = g.offers[:0], g.fresh[:0], g.freshEntry[:0]
	for p := g.a.Ptr[v]; p < g.a.Ptr[v+1]; p++ {
		u := g.a.Idx[p]
		if g.selected[u] {
			continue
		}
		r := g.s.Rel(v, u, p)
		f, seen := g.frontier[u]
		switch {
		case !seen:
			f = &frontierEntry{rel: r, from: v}
			g.frontier[u] = f
			g.fresh, g.freshEntry = append(g.fresh, u), append(g.freshEntry, f)
		case r > f.rel:
			f.rel, f.from = r, v
		default:
			continue
		}
		g.offers = append(g.offers, pendingOffer{u, f, r})
	}
	g.novelties(v)
	for _, o := range g.offers {
		g.offer(o.u, o.rel, o.f.nov)
	}
}

// novelties sets the novelty of each node add found new to the frontier
// to its similarity to v: by one call of Sims when set, else by Sim.
func (g *greedy) novelties(v int32) {
	switch {
	case g.o.Lambda == 0 || len(g.fresh) == 0:
	case g.s.Sims != nil:
		g.sims = slices.Grow(g.sims[:0], len(g.fresh))[:len(g.fresh)]
		g.s.Sims(g.fresh, v, g.sims)
		for i, f := range g.freshEntry {
			f.nov = g.sims[i]
		}
	default:
		for i, f := range g.freshEntry {
			f.nov = g.s.Sim(g.fresh[i], v)
		}
	}
}

// offer pushes u's bound for relevance rel and novelty nov; a NaN is kept
// as the walk's error.
func (g *greedy) offer(u int32, rel, nov float64) {
	b := rel - g.o.Lambda*nov
	if math.IsNaN(b) {
		if g.err == nil {
			g.err = fmt.Errorf("graphops: greedy evidence: the gain of node %d is NaN (a NaN relevance or similarity)", u)
		}
		return
	}
	heap.Push(&g.bounds, gainBound{u: u, key: b, rel: rel})
}

// next pops the frontier node of best gain (ties to the lower id),
// completing novelties only while a bound leads.
func (g *greedy) next() (int32, float64, bool) {
	for g.bounds.Len() > 0 {
		b := heap.Pop(&g.bounds).(gainBound)
		f := g.frontier[b.u]
		if f == nil || f.rel != b.rel { // selected, or superseded by a higher relevance
			continue
		}
		if g.o.Lambda != 0 && f.novAt < len(g.ev.Nodes) {
			for _, w := range g.ev.Nodes[f.novAt:] {
				f.nov = math.Max(f.nov, g.s.Sim(b.u, w))
			}
			f.novAt = len(g.ev.Nodes)
		}
		gain := f.rel - g.o.Lambda*f.nov
		if math.IsNaN(gain) {
			g.offer(b.u, f.rel, f.nov) // records the error
			return 0, 0, false
		}
		if gain == b.key || g.bounds.Len() == 0 || (gainBound{u: b.u, key: gain}).before(g.bounds[0]) {
			return b.u, gain, true
		}
		heap.Push(&g.bounds, gainBound{u: b.u, key: gain, rel: f.rel})
	}
	return 0, 0, false
}

// gainBound is an upper bound on a frontier node's gain, for the relevance
// it was computed with.
type gainBound struct {
	u        int32
	key, rel float64
}

func (a gainBound) before(b gainBound) bool {
	if a.key != b.key {
		return a.key > b.key
	}
	return a.u < b.u
}

// gainHeap is a max-heap of bounds.
type gainHeap []gainBound

func (h gainHeap) Len() int           { return len(h) }
func (h gainHeap) Less(i, j int) bool { return h[i].before(h[j]) }
func (h gainHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *gainHeap) Push(x any)        { *h = append(*h, x.(gainBound)) }
func (h *gainHeap) Pop() any {
	x := (*h)[len(*h)-1]
	*h = (*h)[:len(*h)-1]
	return x
}
