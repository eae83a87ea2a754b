package seeder

import (
	"math/rand/v2"
	"testing"
)

// TestBatchIndependence: a graph's outputs are the same bits whether it
// runs alone or batched with others (concurrent queries share batches).
func TestBatchIndependence(t *testing.T) {
	c := DefaultConfig()
	c.In, c.Words, c.Relations = 8, 5, 4
	w, err := NewWeights[float32](c)
	if err != nil {
		t.Fatal(err)
	}
	m := &Model{Config: c, W: w}
	rng := rand.New(rand.NewPCG(7, 7))
	var gs []*Graph
	for _, n := range []int{300, 7, 120, 500, 45} {
		gs = append(gs, randomGraph(c, n, 3*n, 8, rng))
	}
	all, err := m.Forward(gs)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range gs {
		one, err := m.Forward([]*Graph{g})
		if err != nil {
			t.Fatal(err)
		}
		for r := range one[0].Policy {
			if one[0].Policy[r] != all[i].Policy[r] || one[0].Score[r] != all[i].Score[r] {
				t.Fatalf("graph %d row %d: alone %v/%v, batched %v/%v", i, r, one[0].Policy[r], one[0].Score[r], all[i].Policy[r], all[i].Score[r])
			}
		}
	}
}
