package graphops

import "sync"

// Most live graphs give every entry weight 1 and one relation (the
// mentions graph has no other), and the weight and relation arrays were
// two thirds of what a commit copied into the blocks it changed. A block
// or row whose entries all have weight 1 and one relation below runRels
// shares read-only runs of those values instead of arrays of its own.

// runRels bounds the relations that get a shared run (a graph of many
// relations keeps its arrays: one run per relation would outgrow them).
const runRels = 64

var runs struct {
	sync.Mutex
	ones []float32
	rels [runRels][]int32
}

// onesRun is n ones, read-only (capacity n: an append copies).
func onesRun(n int) []float32 {
	runs.Lock()
	defer runs.Unlock()
	if len(runs.ones) < n {
		runs.ones = make([]float32, max(n, 2*len(runs.ones), 1024))
		for i := range runs.ones {
			runs.ones[i] = 1
		}
	}
	return runs.ones[:n:n]
}

// relRun is n copies of relation r (0 ≤ r < runRels), read-only.
func relRun(r int32, n int) []int32 {
	runs.Lock()
	defer runs.Unlock()
	if len(runs.rels[r]) < n {
		a := make([]int32, max(n, 2*len(runs.rels[r]), 1024))
		for i := range a {
			a[i] = r
		}
		runs.rels[r] = a
	}
	return runs.rels[r][:n:n]
}

// uniform tracks whether the entries seen so far all have weight 1 and
// one relation below runRels.
type uniform struct {
	rel         int32
	seen, mixed bool
}

func (u *uniform) add(w []float32, rel []int32) {
	for i := 0; i < len(w) && !u.mixed; i++ {
		u.addOne(w[i], rel[i])
	}
}

func (u *uniform) addOne(w float32, rel int32) {
	switch {
	case u.mixed:
	case w != 1 || rel < 0 || rel >= runRels || (u.seen && rel != u.rel):
		u.mixed = true
	default:
		u.rel, u.seen = rel, true
	}
}

// arrays are n entries' weight and relation arrays: shared runs when
// every entry was uniform, else empty ones of capacity n to fill.
func (u *uniform) arrays(n int) (w []float32, rel []int32, shared bool) {
	if u.mixed {
		return make([]float32, 0, n), make([]int32, 0, n), false
	}
	return onesRun(n), relRun(u.rel, n), true
}
