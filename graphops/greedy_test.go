package graphops

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// greedyReference re-scores every action from scratch at every step.
func greedyReference(a *Adjacency, start []int32, o GreedyOptions, s GreedyScores) []int32 {
	sel := append([]int32(nil), start...)
	if len(sel) > o.Budget {
		sel = sel[:o.Budget]
	}
	for len(sel) < o.Budget {
		best, bestGain := int32(-1), math.Inf(-1)
		for _, u := range sel {
			for p := a.Ptr[u]; p < a.Ptr[u+1]; p++ {
				v := a.Idx[p]
				if slices.Contains(sel, v) {
					continue
				}
				nov := math.Inf(-1)
				for _, w := range sel {
					nov = math.Max(nov, s.Sim(v, w))
				}
				g := s.Rel(u, v, p) - o.Lambda*nov
				if o.Lambda == 0 {
					g = s.Rel(u, v, p)
				}
				if g > bestGain || (g == bestGain && v < best) {
					best, bestGain = v, g
				}
			}
		}
		if best < 0 || bestGain < o.Stop {
			break
		}
		sel = append(sel, best)
	}
	return sel
}

func randomAdjacency(rng *rand.Rand, n, m int) *Adjacency {
	var edges []Edge
	for i := 0; i < m; i++ {
		edges = append(edges, Edge{Src: int32(rng.IntN(n)), Dst: int32(rng.IntN(n)), W: 1})
	}
	g, _ := Build(n, edges, false)
	return Simplify(Undirected(g, false, nil))
}

// TestGreedyEvidenceMatchesReference: the lazy walk selects what
// re-scoring every action at every step selects, and with Sims set
// (scoring a row's new neighbours in one call) it walks exactly as with
// Sim alone.
func TestGreedyEvidenceMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	sims := 0
	defer func() {
		if sims == 0 {
			t.Error("the walk never called Sims")
		}
	}()
	for trial := 0; trial < 400; trial++ {
		n := 5 + rng.IntN(40)
		if trial%4 == 3 { // larger frontiers: the lazy selection re-offers most bounds
			n = 100 + rng.IntN(200)
		}
		a := randomAdjacency(rng, n, rng.IntN(3*n))
		rel, emb := make([]float64, n), make([][2]float64, n)
		for i := range rel {
			rel[i] = math.Round(rng.Float64()*8) / 8 // ties happen
			th := rng.Float64() * 2 * math.Pi
			emb[i] = [2]float64{math.Cos(th), math.Sin(th)}
		}
		s := GreedyScores{
			Rel: func(u, v int32, p int64) float64 { return rel[v] + 0.01*float64(u%3) },
			Sim: func(u, v int32) float64 { return emb[u][0]*emb[v][0] + emb[u][1]*emb[v][1] },
		}
		o := GreedyOptions{Budget: 1 + rng.IntN(12), Lambda: []float64{0, 0.3, 1}[trial%3], Stop: []float64{math.Inf(-1), 0}[trial%2]}
		start := []int32{int32(rng.IntN(n))}
		if u := int32(rng.IntN(n)); u != start[0] && trial%4 == 0 {
			start = append(start, u)
		}
		ev, err := GreedyEvidence(context.Background(), a, start, o, s)
		if err != nil {
			t.Fatal(err)
		}
		want := greedyReference(a, start, o, s)
		if !slices.Equal(ev.Nodes, want) {
			t.Fatalf("trial %d (%+v): got %v, want %v", trial, o, ev.Nodes, want)
		}
		batched := s
		batched.Sims = func(us []int32, v int32, out []float64) {
			sims++
			for i, u := range us {
				out[i] = s.Sim(u, v)
			}
		}
		evb, err := GreedyEvidence(context.Background(), a, start, o, batched)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(evb.Nodes, ev.Nodes) || !slices.Equal(evb.Via, ev.Via) || !slices.EqualFunc(evb.Gains, ev.Gains, sameFloat) {
			t.Fatalf("trial %d (%+v): with Sims %v %v %v, without %v %v %v", trial, o, evb.Nodes, evb.Via, evb.Gains, ev.Nodes, ev.Via, ev.Gains)
		}
		if len(ev.Graph.Nodes) != len(ev.Nodes) {
			t.Fatalf("induced graph has %d nodes, want %d", len(ev.Graph.Nodes), len(ev.Nodes))
		}
		for i, v := range ev.Nodes {
			via := ev.Via[i]
			if via < 0 {
				continue
			}
			if !slices.Contains(a.Idx[a.Ptr[via]:a.Ptr[via+1]], v) {
				t.Fatalf("node %d reached from %d without an edge", v, via)
			}
		}
	}
}

func TestGreedyEvidenceStopsAndRejects(t *testing.T) {
	a := randomAdjacency(rand.New(rand.NewPCG(1, 1)), 10, 30)
	s := GreedyScores{Rel: func(u, v int32, p int64) float64 { return -1 }}
	ev, err := GreedyEvidence(context.Background(), a, []int32{0}, GreedyOptions{Budget: 5, Stop: 0}, s)
	if err != nil || len(ev.Nodes) != 1 {
		t.Fatalf("a negative best gain must stop at the start node: %v %v", ev, err)
	}
	for _, c := range []struct {
		start []int32
		o     GreedyOptions
	}{
		{[]int32{0}, GreedyOptions{Budget: 0}},
		{[]int32{0}, GreedyOptions{Budget: 3, Lambda: -1}},
		{[]int32{0}, GreedyOptions{Budget: 3, Stop: math.NaN()}},
		{[]int32{10}, GreedyOptions{Budget: 3}},
		{[]int32{2, 2}, GreedyOptions{Budget: 3}},
		{[]int32{2, 3, 3}, GreedyOptions{Budget: 1}},      // a duplicate beyond the budget is still a mistake
		{[]int32{0}, GreedyOptions{Budget: 3, Lambda: 1}}, // lambda > 0 without Sim
	} {
		if _, err := GreedyEvidence(context.Background(), a, c.start, c.o, s); err == nil {
			t.Errorf("start %v options %+v: no error", c.start, c.o)
		}
	}
	nan := GreedyScores{Rel: func(u, v int32, p int64) float64 { return math.NaN() }}
	v := int32(0)
	for a.Ptr[v+1] == a.Ptr[v] {
		v++
	}
	if _, err := GreedyEvidence(context.Background(), a, []int32{v}, GreedyOptions{Budget: 3, Stop: math.Inf(-1)}, nan); err == nil {
		t.Error("NaN gains must be an error, not a STOP")
	}
	// A NaN similarity is reported for the same node with Sims as without.
	odd := GreedyScores{Rel: func(u, v int32, p int64) float64 { return 1 }, Sim: func(u, w int32) float64 {
		if u%2 == 1 {
			return math.NaN()
		}
		return 0.5
	}}
	_, plain := GreedyEvidence(context.Background(), a, []int32{v}, GreedyOptions{Budget: 5, Lambda: 1, Stop: math.Inf(-1)}, odd)
	odd.Sims = func(us []int32, w int32, out []float64) {
		for i, u := range us {
			out[i] = odd.Sim(u, w)
		}
	}
	_, batched := GreedyEvidence(context.Background(), a, []int32{v}, GreedyOptions{Budget: 5, Lambda: 1, Stop: math.Inf(-1)}, odd)
	if plain == nil || batched == nil || plain.Error() != batched.Error() {
		t.Errorf("NaN similarities: %v without Sims, %v with", plain, batched)
	}
}

// sameFloat is equality that counts a NaN (a start node's gain) equal to
// a NaN.
func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
