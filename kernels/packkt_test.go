package kernels

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPackKTMatchesGo checks that the Kᵀ packing in use (C where cgo is
// on) scales and transposes exactly as the Go twin, reading only the
// head's columns of rows hd apart.
func TestPackKTMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, d := range []int{1, 8, 32, 33} {
		l, hd := 9, 3*d
		k := randSlice(rng, (l-1)*hd+d)
		want, got := make([]float32, d*l), make([]float32, d*l)
		packKTGo(k, want, l, d, hd, 0.25)
		packKT(k, got, l, d, hd, 0.25)
		if !slices.Equal(want, got) {
			t.Fatalf("d=%d: packed Kᵀ differs from the Go twin", d)
		}
		for i := 0; i < l; i++ {
			for j := 0; j < d; j++ {
				if got[j*l+i] != k[i*hd+j]*0.25 {
					t.Fatalf("d=%d: kt[%d,%d] = %v, want %v", d, j, i, got[j*l+i], k[i*hd+j]*0.25)
				}
			}
		}
	}
}
