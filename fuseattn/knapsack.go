package fuseattn

import "fmt"

// MaxKnapsackCapacity bounds τ: the DP keeps a (items × (τ+1)) bit table
// for the traceback, so τ is a context size, not an arbitrary integer.
const MaxKnapsackCapacity = 1 << 20

// Knapsack solves the 0-1 knapsack: the subset of items maximising the sum
// of values with the sum of weights ≤ capacity. Weights must be ≥ 0 and
// values finite; items with value ≤ 0 are never taken. It returns the
// chosen item indices in increasing order and their total value.
//
// The DP keeps one row of best values (O(τ) floats) and, per item, one bit
// per capacity saying whether the item improved that cell (O(F·τ) bits),
// which the traceback walks backwards: O(F·τ) time. Ties keep the earlier
// items' solution, so the result is deterministic.
func Knapsack(weights []int, values []float64, capacity int) ([]int, float64, error) {
	if len(weights) != len(values) {
		return nil, 0, fmt.Errorf("fuseattn: knapsack: %d weights for %d values", len(weights), len(values))
	}
	if capacity < 0 || capacity > MaxKnapsackCapacity {
		return nil, 0, fmt.Errorf("fuseattn: knapsack capacity must be in [0, %d], got %d", MaxKnapsackCapacity, capacity)
	}
	for i, w := range weights {
		if w < 0 {
			return nil, 0, fmt.Errorf("fuseattn: knapsack item %d has negative weight %d", i, w)
		}
		if v := values[i]; v != v || v > 1e300 || v < -1e300 {
			return nil, 0, fmt.Errorf("fuseattn: knapsack item %d has value %v", i, v)
		}
	}
	best := make([]float64, capacity+1)
	words := (capacity + 64) / 64
	took := make([]uint64, len(weights)*words)
	for i, w := range weights {
		if values[i] <= 0 || w > capacity {
			continue
		}
		row := took[i*words : (i+1)*words]
		for c := capacity; c >= w; c-- {
			if v := best[c-w] + values[i]; v > best[c] {
				best[c] = v
				row[c/64] |= 1 << (c % 64)
			}
		}
	}
	var chosen []int
	c := capacity
	for i := len(weights) - 1; i >= 0; i-- {
		if took[i*words+c/64]&(1<<(c%64)) != 0 {
			chosen = append(chosen, i)
			c -= weights[i]
		}
	}
	for l, r := 0, len(chosen)-1; l < r; l, r = l+1, r-1 {
		chosen[l], chosen[r] = chosen[r], chosen[l]
	}
	return chosen, best[capacity], nil
}
