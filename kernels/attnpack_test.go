package kernels

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAttnPackMatchesGo checks that the head packing in use (C where the
// CPU allows) copies, scales and transposes exactly as the Go twin, for
// head dimensions with and without a 16-lane tail, and that unpacking
// writes only the head's columns.
func TestAttnPackMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, d := range []int{8, 16, 32, 33} {
		heads, seq, l := 3, 11, 9
		hd := heads * d
		a := AttentionArgs{Batch: 1, Seq: seq, Heads: heads, HeadDim: d,
			Q: randSlice(rng, seq*hd), K: randSlice(rng, seq*hd), V: randSlice(rng, seq*hd), Out: randSlice(rng, seq*hd)}
		off := 1 * d // the second head
		want, got := newHeadScratch(seq, d), newHeadScratch(seq, d)
		attnPackGo(a, want, off, l, hd, 0.25)
		attnPack(a, got, off, l, hd, 0.25)
		if !slices.Equal(want.q[:l*d], got.q[:l*d]) || !slices.Equal(want.kt[:l*d], got.kt[:l*d]) || !slices.Equal(want.v[:l*d], got.v[:l*d]) {
			t.Fatalf("d=%d: packed head differs from the Go twin", d)
		}
		got.o = randSlice(rng, seq*d)
		before := slices.Clone(a.Out)
		attnUnpack(a, got, off, l, hd)
		for i := 0; i < seq; i++ {
			for j := 0; j < hd; j++ {
				x, inHead := a.Out[i*hd+j], i < l && j >= off && j < off+d
				if inHead && x != got.o[i*d+j-off] || !inHead && x != before[i*hd+j] {
					t.Fatalf("d=%d: Out[%d,%d] = %v after unpacking", d, i, j, x)
				}
			}
		}
	}
}
