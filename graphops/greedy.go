package graphops

import (
	"context"
	"fmt"
	"math"
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
}

// Evidence is the retrieved evidence set B_q with its graph G_q.
type Evidence struct {
	Nodes []int32   // start nodes first, then in selection order
	Gains []float64 // each selected node's gain (start nodes: NaN)
	Via   []int32   // the selected node each one was reached from (−1 for start nodes)
	Graph *Subgraph // the graph induced by Nodes over the adjacency (E_q)
}

// frontierEntry is the best action reaching one unselected node.
type frontierEntry struct {
	rel  float64 // best relevance over edges from the selected set
	from int32
}

// GreedyEvidence grows the selected set V from the start nodes one node at
// a time. The actions are the edges u–v with u ∈ V and v ∉ V; an action's
// gain is Rel(u, v, p) − λ·max_{w∈V} Sim(v, w) (the MMR reading of
// FuseRAG's s_t, docs/methods.md §7.1); the best action (ties to the lower node
// id) adds v, until the budget is spent, no edge leaves V, or the best gain
// is below Stop. Each step costs O(|frontier|) plus the new node's row and
// one Sim per frontier node, as the paper's O(c_t·|V_t|·d) with the
// max-similarity kept incrementally. Duplicate or out-of-range start nodes
// and NaN gains are errors; start nodes beyond the budget are dropped.
func GreedyEvidence(ctx context.Context, a *Adjacency, start []int32, o GreedyOptions, s GreedyScores) (*Evidence, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if s.Rel == nil || (s.Sim == nil && o.Lambda != 0) {
		return nil, fmt.Errorf("graphops: greedy evidence needs Rel (and Sim when lambda > 0)")
	}
	ev := &Evidence{}
	selected := make(map[int32]bool, min(o.Budget, a.N())) // a budget is not a size: it may exceed the graph
	frontier := map[int32]*frontierEntry{}
	novelty := map[int32]float64{} // max Sim to the selected set, per frontier node
	add := func(v, from int32, gain float64) {
		selected[v] = true
		delete(frontier, v)
		delete(novelty, v)
		ev.Nodes, ev.Gains, ev.Via = append(ev.Nodes, v), append(ev.Gains, gain), append(ev.Via, from)
		if o.Lambda != 0 {
			for u := range frontier {
				novelty[u] = math.Max(novelty[u], s.Sim(u, v))
			}
		}
		for p := a.Ptr[v]; p < a.Ptr[v+1]; p++ {
			u := a.Idx[p]
			if selected[u] {
				continue
			}
			r := s.Rel(v, u, p)
			f, seen := frontier[u]
			if !seen {
				frontier[u] = &frontierEntry{rel: r, from: v}
				if o.Lambda != 0 {
					novelty[u] = maxSim(s.Sim, u, ev.Nodes)
				}
				continue
			}
			if r > f.rel {
				f.rel, f.from = r, v
			}
		}
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
	for _, v := range start[:min(len(start), o.Budget)] {
		add(v, -1, math.NaN())
	}
	for len(ev.Nodes) < o.Budget && len(frontier) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		best, bestGain, from := int32(-1), math.Inf(-1), int32(-1)
		for u, f := range frontier {
			g := f.rel - o.Lambda*novelty[u]
			if math.IsNaN(g) {
				return nil, fmt.Errorf("graphops: greedy evidence: the gain of node %d is NaN (a NaN relevance or similarity)", u)
			}
			if g > bestGain || (g == bestGain && (best < 0 || u < best)) {
				best, bestGain, from = u, g, f.from
			}
		}
		if best < 0 || bestGain < o.Stop {
			break
		}
		add(best, from, bestGain)
	}
	ev.Graph = InducedAdj(a, ev.Nodes)
	return ev, nil
}

func maxSim(sim func(u, v int32) float64, u int32, set []int32) float64 {
	m := math.Inf(-1)
	for _, v := range set {
		m = math.Max(m, sim(u, v))
	}
	return m
}
