package strtab

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestNamesFollowAMap adds and removes names at random, with real hashes
// and with hashes that collide all the time, through compactions, and
// checks every name both ways against a map after each step.
func TestNamesFollowAMap(t *testing.T) {
	for _, collide := range []bool{false, true} {
		t.Run(fmt.Sprint("collide=", collide), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(2, 9))
			n := NewNames()
			if collide {
				n.hash = func(s string) uint64 { return uint64(len(s) % 16) }
			}
			want := map[string]int32{}
			held := map[int32]bool{} // removed, not yet released
			compactions := 0
			handed := map[string]string{} // names handed out, by what they said then
			for step := range 20000 {
				k := rng.IntN(500)
				s := fmt.Sprintf("name-%d-%s", k, strings.Repeat("\x00", k%40))
				if v, ok := want[s]; ok {
					n.Remove(v)
					delete(want, s)
					held[v] = true
				} else {
					before := n.dead
					v := n.Add(s)
					if held[v] {
						t.Fatalf("step %d: number %d given again before Release", step, v)
					}
					if n.dead < before {
						compactions++
					}
					want[s] = v
					if len(handed) < 100 {
						handed[s] = n.Name(v)
					}
				}
				if step%50 == 0 {
					n.Release()
					clear(held)
				}
				if step%97 != 0 {
					continue
				}
				for s, v := range want {
					if got, ok := n.ID(s); !ok || got != v || n.Name(v) != s || !n.Has(v) {
						t.Fatalf("step %d: %q is %d (%v), named %q; want %d", step, s, got, ok, n.Name(v), v)
					}
				}
				for v := range held {
					if n.Has(v) {
						t.Fatalf("step %d: removed number %d still in use", step, v)
					}
				}
			}
			for s, name := range handed { // through compactions and removals
				if name != s {
					t.Fatalf("a name handed out as %q now reads %q", s, name)
				}
			}
			if compactions == 0 {
				t.Fatal("no compaction: the test does not reach it")
			}
		})
	}
}
