package engine

import "sort"

// Hit is one scored item: Index is the row or node number. It is the
// result type of every ranking in gleaner (ops, methods, the server).
type Hit struct {
	Index int32
	Score float32
}

// better orders hits: higher score first, then lower index (stable by index
// on ties, so results never depend on scheduling).
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Index < b.Index
}

// SortHits sorts hits best first.
func SortHits(h []Hit) { sort.Slice(h, func(i, j int) bool { return better(h[i], h[j]) }) }

// TopK keeps the k best hits seen so far in a min-heap whose root is the
// worst kept hit.
//
// Reference loop: collect every (index, score), sort by score descending
// then index ascending, keep the first k.
type TopK struct {
	k int
	h []Hit
}

// NewTopK returns an empty selector for k hits (k ≥ 0; a negative k keeps
// nothing). Storage grows with the hits actually pushed, so a huge k (a
// user's -k 9223372036854775807) costs no more than the items offered.
func NewTopK(k int) *TopK { return &TopK{k: max(k, 0), h: make([]Hit, 0, min(max(k, 0), 1024))} }

// Reset empties the selector, keeping its storage, and sets a new k.
func (t *TopK) Reset(k int) {
	t.k = max(k, 0)
	t.h = t.h[:0]
}

// Len is the number of hits kept.
func (t *TopK) Len() int { return len(t.h) }

// Threshold is the score an item must beat to enter a full selector; it is
// -Inf-like (false) while the selector is not full.
func (t *TopK) Threshold() (float32, bool) {
	if len(t.h) < t.k || t.k == 0 {
		return 0, false
	}
	return t.h[0].Score, true
}

// Push offers one hit.
func (t *TopK) Push(idx int32, score float32) {
	if score != score { // NaN never ranks
		return
	}
	x := Hit{Index: idx, Score: score}
	if len(t.h) < t.k {
		t.h = append(t.h, x)
		t.up(len(t.h) - 1)
		return
	}
	if t.k == 0 || !better(x, t.h[0]) {
		return
	}
	t.h[0] = x
	t.down(0)
}

// Results returns the kept hits best first; the selector is left empty.
func (t *TopK) Results() []Hit {
	out := make([]Hit, len(t.h))
	copy(out, t.h)
	SortHits(out)
	t.h = t.h[:0]
	return out
}

// worse is the heap order: the root is the worst hit.
func (t *TopK) worse(i, j int) bool { return better(t.h[j], t.h[i]) }

func (t *TopK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.worse(i, p) {
			return
		}
		t.h[i], t.h[p] = t.h[p], t.h[i]
		i = p
	}
}

func (t *TopK) down(i int) {
	n := len(t.h)
	for {
		l, m := 2*i+1, i
		if l < n && t.worse(l, m) {
			m = l
		}
		if r := l + 1; r < n && t.worse(r, m) {
			m = r
		}
		if m == i {
			return
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
}

// MergeHits merges several best-first lists and keeps the best k.
func MergeHits(k int, lists ...[]Hit) []Hit {
	var all []Hit
	for _, l := range lists {
		all = append(all, l...)
	}
	SortHits(all)
	if len(all) > k {
		all = all[:k]
	}
	return all
}
