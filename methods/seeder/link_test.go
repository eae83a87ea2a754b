package seeder

import (
	"slices"
	"testing"
)

// TestEntityLinkerMatches: whole-token, case- and punctuation-insensitive
// matches; a match inside a longer one and names of stop words only are
// dropped; a node's aliases share its slot.
func TestEntityLinkerMatches(t *testing.T) {
	names := map[int][]string{0: {"Ann Lee", "ann_lee"}, 1: {"Lee"}, 2: {"It"}, 3: {"Paris"}}
	l := newLinker(4, func(v int) []string { return names[v] })
	ms := l.link("Is it where ANN-LEE lives, near paris?")
	var got []int32
	for _, m := range ms {
		got = append(got, m.node)
	}
	if !slices.Equal(got, []int32{0, 3}) {
		t.Fatalf("matches %+v", ms)
	}
	seeds, linked := l.seeds("Is it where ANN-LEE lives, near paris?", []float32{0.1, 0.9, 0.8, 0.2}, 5, 3, nil)
	if !slices.Equal(seeds, []int32{0, 3, 1}) || linked != 2 {
		t.Fatalf("seeds %v (%d linked): the longer match first, then the nearest unlinked node", seeds, linked)
	}
}
