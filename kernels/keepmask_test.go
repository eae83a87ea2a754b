package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKeepMaskMatchesReference checks every implementation against the
// reference loop on scores with ties at the threshold, NaNs and infinities,
// NaN thresholds (heaps not full), and rows that end inside a 16-score
// compare and inside a 64-bit word, over a mask left dirty by an earlier
// block.
func TestKeepMaskMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for name, impl := range keepMaskImpls {
		for _, rows := range []int{1, 15, 16, 17, 63, 64, 65, 100, 256} {
			nq := 5
			scores := make([]float32, nq*rows)
			for i := range scores {
				switch rng.IntN(10) {
				case 0:
					scores[i] = nan
				case 1:
					scores[i] = inf
				case 2:
					scores[i] = -inf
				case 3:
					scores[i] = 0.5 // the threshold of some queries: a tie is not kept
				default:
					scores[i] = float32(rng.NormFloat64())
				}
			}
			thr := []float32{0.5, nan, -inf, inf, 0}
			words := (rows + 63) / 64
			// a sentinel word past the mask catches a write beyond it
			buf := make([]uint64, nq*words+1)
			for i := range buf {
				buf[i] = ^uint64(0)
			}
			got := buf[:nq*words]
			impl(scores, rows, nq, thr, got)
			if buf[nq*words] != ^uint64(0) {
				t.Fatalf("%s rows=%d: wrote past the mask", name, rows)
			}
			for q := 0; q < nq; q++ {
				for r := 0; r < words*64; r++ {
					v := scores[q*rows+min(r, rows-1)]
					want := r < rows && !(v <= thr[q])
					if bit := got[q*words+r/64]>>(r%64)&1 == 1; bit != want {
						t.Fatalf("%s rows=%d query %d row %d (score %v, threshold %v): kept %v, want %v", name, rows, q, r, v, thr[q], bit, want)
					}
				}
			}
		}
	}
}
