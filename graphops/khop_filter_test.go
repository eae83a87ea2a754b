package graphops

import (
	"context"
	"slices"
	"testing"
)

// A hand graph: seed 0 –r0– 1, 0 –r1– 2, 1 –r0– 3, 2 –r0– 4, 4 –r1– 5.
func TestKHopFilter(t *testing.T) {
	g, err := Build(6, []Edge{{0, 1, 1, 0}, {0, 2, 1, 1}, {1, 3, 1, 0}, {4, 2, 1, 0}, {4, 5, 1, 1}}, true)
	if err != nil {
		t.Fatal(err)
	}
	node := []float64{0, 0.9, 0.1, 0.5, 0.2, 0.8}
	rel := []float64{0, 0.6} // r1 is the question's relation
	s := KHopScores{
		Node:   func(u int32) float64 { return node[u] },
		Rel:    func(r int32) float64 { return rel[r] },
		Source: func(v int32, hop int) float64 { return map[bool]float64{true: 1, false: node[v]}[hop == 1] },
	}
	// hop 1: 1 scores (0.9 + 1 + 0)/3, 2 scores (0.1 + 1 + 0.6)/3 = 0.567 < 0.633: quota 1 keeps 1.
	nodes, hops, err := KHopFilter(context.Background(), g, []int32{0}, KHopFilterOptions{Quotas: []int{1, 1}, Cap: 10}, s)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(nodes, []int32{0, 1, 3}) || !slices.Equal(hops, []int{0, 1, 2}) {
		t.Fatalf("nodes %v hops %v", nodes, hops)
	}
	// Larger quotas reach 4 through 2 (an In edge) at hop 2, and the cap stops the walk.
	nodes, _, _ = KHopFilter(context.Background(), g, []int32{0}, KHopFilterOptions{Quotas: []int{2, 2, 2}, Cap: 5}, s)
	if !slices.Equal(nodes, []int32{0, 1, 2, 3, 4}) {
		t.Fatalf("nodes %v", nodes)
	}
	if _, _, err := KHopFilter(context.Background(), g, nil, KHopFilterOptions{Cap: 5}, s); err == nil {
		t.Fatal("no quotas accepted")
	}
}

// TestKHopFilterRelHop: a relation term that knows the hop and the
// direction. Same graph; the question wants r1 forward at hop 1 (0 → 2)
// and r0 backward at hop 2 (2 ← 4: the edge is stored 4 → 2), against
// node 6, nearer the question but reached along r0 forward.
func TestKHopFilterRelHop(t *testing.T) {
	g, err := Build(7, []Edge{{0, 1, 1, 0}, {0, 2, 1, 1}, {1, 3, 1, 0}, {4, 2, 1, 0}, {4, 5, 1, 1}, {2, 6, 1, 0}}, true)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		r   int32
		inv bool
		hop int
	}
	want := map[key]float64{{1, false, 1}: 1, {0, true, 2}: 1}
	var asked []key
	s := KHopScores{
		Node: func(u int32) float64 { return map[int32]float64{6: 0.5}[u] },
		Rel:  func(int32) float64 { t.Fatal("Rel called with RelHop set"); return 0 },
		RelHop: func(r int32, inv bool, hop int) float64 {
			asked = append(asked, key{r, inv, hop})
			return want[key{r, inv, hop}]
		},
		Source: func(int32, int) float64 { return 0 },
	}
	nodes, hops, err := KHopFilter(context.Background(), g, []int32{0}, KHopFilterOptions{Quotas: []int{1, 1}, Cap: 10}, s)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(nodes, []int32{0, 2, 4}) || !slices.Equal(hops, []int{0, 1, 2}) {
		t.Fatalf("nodes %v hops %v (asked %v)", nodes, hops, asked)
	}
	if !slices.Contains(asked, key{0, true, 2}) || !slices.Contains(asked, key{1, false, 1}) {
		t.Fatalf("relation terms asked: %v", asked)
	}
}

// TestKHopFilterMass: a reading's answer mass ranks a hop's candidates
// before the paper's score, which breaks ties among equal masses. Same
// graph as TestKHopFilter: by score hop 1 keeps 1, by mass it keeps 2
// and then 4 at hop 2; with no mass anywhere the score decides again.
func TestKHopFilterMass(t *testing.T) {
	g, err := Build(6, []Edge{{0, 1, 1, 0}, {0, 2, 1, 1}, {1, 3, 1, 0}, {4, 2, 1, 0}, {4, 5, 1, 1}}, true)
	if err != nil {
		t.Fatal(err)
	}
	node := []float64{0, 0.9, 0.1, 0.5, 0.2, 0.8}
	mass := map[int]map[int32]float64{1: {2: 0.7, 1: 0.2}, 2: {4: 0.5}}
	s := KHopScores{
		Node:   func(u int32) float64 { return node[u] },
		Rel:    func(int32) float64 { return 0 },
		Source: func(int32, int) float64 { return 0 },
		Mass:   func(u int32, hop int) float64 { return mass[hop][u] },
	}
	nodes, hops, err := KHopFilter(context.Background(), g, []int32{0}, KHopFilterOptions{Quotas: []int{1, 1}, Cap: 10}, s)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(nodes, []int32{0, 2, 4}) || !slices.Equal(hops, []int{0, 1, 2}) {
		t.Fatalf("nodes %v hops %v", nodes, hops)
	}
	s.Mass = func(int32, int) float64 { return 0 }
	if nodes, _, _ = KHopFilter(context.Background(), g, []int32{0}, KHopFilterOptions{Quotas: []int{1, 1}, Cap: 10}, s); !slices.Equal(nodes, []int32{0, 1, 3}) {
		t.Fatalf("without mass: nodes %v", nodes)
	}
}
