package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTopKMatchesReference: the selector keeps what sorting every offer
// (score descending, index ascending; NaN dropped) and taking the first k
// keeps, across ties, NaN, -Inf, k of 0 and past the offers, and reuse
// after Results and Reset (the fast refusal's floor must not outlive
// them).
func TestTopKMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	top := NewTopK(0)
	for trial := range 2000 {
		n, k := rng.IntN(60), rng.IntN(12)
		if trial%3 == 0 {
			top = NewTopK(k)
		} else {
			top.Reset(k)
		}
		if trial%5 == 0 { // a full selector emptied by Results, then refilled
			top.Push(1, 1e30)
			top.Results()
		}
		var all []Hit
		for i := range n {
			s := float32(rng.IntN(6)) // few distinct scores: many ties
			switch rng.IntN(20) {
			case 0:
				s = float32(math.NaN())
			case 1:
				s = float32(math.Inf(-1))
			}
			top.Push(int32(i), s)
			if s == s {
				all = append(all, Hit{int32(i), s})
			}
		}
		SortHits(all)
		want := all[:min(k, len(all))]
		if got := top.Results(); !slices.Equal(got, want) {
			t.Fatalf("trial %d (n %d, k %d): %v, want %v", trial, n, k, got, want)
		}
	}
}
