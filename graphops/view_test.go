package graphops

import (
	"context"
	"math"
	"testing"
)

// A graph with a parallel edge (0→1 twice, and 1→0 once more), a self-loop
// on 2 and a plain edge 2→3: the simple view has distinct neighbours only,
// merged weights and no loop; induced subgraphs and degrees agree with it.
func TestSimplifyMergesParallelEdgesAndDropsLoops(t *testing.T) {
	g, err := Build(4, []Edge{{0, 1, 1, 0}, {0, 1, 2, 0}, {1, 0, 1, 0}, {2, 2, 5, 0}, {2, 3, 1, 0}}, false)
	if err != nil {
		t.Fatal(err)
	}
	raw := Undirected(g, true, nil)
	if raw.TotalDegree(0) != 3 || raw.TotalDegree(2) != 3 {
		t.Fatalf("raw view degrees %d %d: the test premise changed", raw.TotalDegree(0), raw.TotalDegree(2))
	}
	s := Simplify(raw)
	wantDeg := []int{1, 1, 1, 1}
	wantStrength := []float64{4, 4, 1, 1}
	for v := range 4 {
		if s.TotalDegree(v) != wantDeg[v] || s.Strength[v] != wantStrength[v] {
			t.Errorf("vertex %d: degree %d strength %v, want %d %v", v, s.TotalDegree(v), s.Strength[v], wantDeg[v], wantStrength[v])
		}
		var seen []int32
		s.EachUndirected(v, func(u int32) { seen = append(seen, u) })
		for _, u := range seen {
			if int(u) == v {
				t.Errorf("vertex %d keeps its self-loop", v)
			}
		}
		if len(seen) != s.TotalDegree(v) {
			t.Errorf("vertex %d: %d neighbours listed, degree %d", v, len(seen), s.TotalDegree(v))
		}
	}
	sub := InducedAdj(s, []int32{0, 1, 2, 3})
	for i, d := range sub.Deg {
		if int(d) != wantDeg[i] {
			t.Errorf("induced degree of %d = %v, want %d", i, d, wantDeg[i])
		}
	}
	// PageRank over the simple view equals PageRank over the raw view
	// without the loop: parallel edges act through their summed weight.
	noLoop, _ := Build(4, []Edge{{0, 1, 4, 0}, {2, 3, 1, 0}}, false)
	reset := []float64{1, 0, 1, 0}
	a, _, err := PersonalizedPageRank(context.Background(), s, reset, DefaultPPROptions())
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := PersonalizedPageRank(context.Background(), Undirected(noLoop, true, nil), reset, DefaultPPROptions())
	for v := range a {
		if math.Abs(a[v]-b[v]) > 1e-12 {
			t.Errorf("pagerank[%d] = %v over the simple view, %v over the loop-free graph", v, a[v], b[v])
		}
	}
}
