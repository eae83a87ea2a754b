package fuseattn

import (
	"math/rand/v2"
	"testing"
)

// TestKnapsackMatchesBruteForce compares the DP's optimum with every subset
// of small random instances (values are multiples of 1/4, so sums are
// exact in float64).
func TestKnapsackMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	for trial := 0; trial < 400; trial++ {
		n := rng.IntN(13)
		w, v := make([]int, n), make([]float64, n)
		for i := range w {
			w[i] = rng.IntN(20)
			v[i] = float64(rng.IntN(41)-8) / 4 // some ≤ 0
		}
		capacity := rng.IntN(70)
		chosen, total, err := Knapsack(w, v, capacity)
		if err != nil {
			t.Fatal(err)
		}
		wsum, vsum := 0, 0.0
		for k, i := range chosen {
			if k > 0 && chosen[k-1] >= i {
				t.Fatalf("chosen %v not increasing", chosen)
			}
			wsum, vsum = wsum+w[i], vsum+v[i]
		}
		if wsum > capacity || vsum != total {
			t.Fatalf("trial %d: chosen %v weighs %d (cap %d), sums to %v, reported %v", trial, chosen, wsum, capacity, vsum, total)
		}
		bestBrute := 0.0
		for mask := 0; mask < 1<<n; mask++ {
			ws, vs := 0, 0.0
			for i := 0; i < n; i++ {
				if mask&(1<<i) != 0 {
					ws, vs = ws+w[i], vs+v[i]
				}
			}
			if ws <= capacity && vs > bestBrute {
				bestBrute = vs
			}
		}
		if total != bestBrute {
			t.Fatalf("trial %d: weights %v values %v cap %d: DP %v, brute force %v", trial, w, v, capacity, total, bestBrute)
		}
	}
}

func TestKnapsackRejectsBadInput(t *testing.T) {
	for _, c := range []struct {
		w   []int
		v   []float64
		cap int
	}{
		{[]int{1}, nil, 4},
		{[]int{-1}, []float64{1}, 4},
		{[]int{1}, []float64{1}, -1},
		{[]int{1}, []float64{1}, MaxKnapsackCapacity + 1},
	} {
		if _, _, err := Knapsack(c.w, c.v, c.cap); err == nil {
			t.Errorf("%v %v cap %d: no error", c.w, c.v, c.cap)
		}
	}
}
