package strtab

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSetsFollowMaps inserts and removes at random, often enough that
// sets move and the pool compacts, and compares every set with a map's
// after each step.
func TestSetsFollowMaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 7))
	var p Sets
	want := map[int32]map[int32]bool{}
	compactions := 0
	for step := range 40000 {
		i, v := int32(rng.IntN(60)), int32(rng.IntN(200))
		before := len(p.data)
		switch rng.IntN(5) {
		case 0, 1, 2:
			p.Insert(i, v)
			if want[i] == nil {
				want[i] = map[int32]bool{}
			}
			want[i][v] = true
		case 3:
			p.Remove(i, v)
			delete(want[i], v)
		default:
			p.Clear(i)
			clear(want[i])
		}
		if len(p.data) < before {
			compactions++
		}
		for k := range int32(60) {
			w := slices.Sorted(maps.Keys(want[k]))
			if got := p.Get(k); !slices.Equal(got, w) || p.Size(k) != len(w) {
				t.Fatalf("step %d: set %d is %v, want %v", step, k, got, w)
			}
		}
	}
	if compactions == 0 {
		t.Fatal("the pool never compacted: the test does not reach it")
	}
	for i, r := range p.sets {
		if r.c > 16 && r.n < r.c/4 {
			t.Errorf("set %d: %d entries in a room of %d", i, r.n, r.c)
		}
	}
	if p.dead > len(p.data)/2+1024 {
		t.Fatalf("%d of %d entries unused after compactions", p.dead, len(p.data))
	}
}
