package gar

import (
	"math"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// GAR's equal priorities come out in insertion order, as the reference's
// Counter.most_common does; a raised priority keeps its place, a removed
// and re-added document goes to the back. Node numbers are chosen so that
// ordering by number would give the reverse.
func TestGARPriorityTiesFollowInsertionOrder(t *testing.T) {
	p := newPrio()
	p.set(9, 1)
	p.set(5, 0.5)
	p.set(2, 1)
	p.set(7, 1)
	p.set(5, 1) // raised to the tie: keeps its insertion place (second)
	p.remove(9)
	p.set(9, 1) // re-added: last
	if got, want := p.top(5), []int32{5, 2, 7, 9}; !slices.Equal(got, want) {
		t.Errorf("top = %v, want %v", got, want)
	}
	q := newPrio()
	q.set(3, 2)
	q.set(1, 2)
	q.set(3, 1) // a lower score never lowers a priority
	if got, want := q.top(2), []int32{3, 1}; !slices.Equal(got, want) {
		t.Errorf("top = %v, want %v", got, want)
	}
}

// GAR's frontier update follows the reference's _update_frontier: once the
// frontier holds rem documents, only a score ≥ minscore may add more.
func TestGARFrontierRule(t *testing.T) {
	adj := &graphops.Adjacency{Ptr: []int64{0, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}, Idx: []int32{10, 11, 12, 13}}
	m := &gar{adj: adj, o: Options{Budget: 10, Batch: 3}}
	frontier := newPrio()
	done := map[int32]bool{0: true, 1: true, 2: true}
	minscore := m.grow(adj, frontier, []int32{1, 0, 2}, []float32{0.5, 0.9, 0.1}, done, 2, float32(math.Inf(1)))
	if got := frontier.top(10); !slices.Equal(got, []int32{10, 11}) || minscore != 0.9 {
		t.Errorf("frontier %v, minscore %v; want [10 11] and 0.9 (documents 1 and 2 come after the frontier is full)", got, minscore)
	}
}

// GAR's ranking orders equal scores as Counter.most_common on (score,
// iteration): the later iteration first; backfill stops at the budget.
func TestGARRankingTies(t *testing.T) {
	m := &gar{o: Options{Budget: 5, Batch: 1}}
	scored := []garScored{{retrieve.Hit{Index: 1, Score: 0.5}, 0}, {retrieve.Hit{Index: 2, Score: 0.5}, 1}, {retrieve.Hit{Index: 3, Score: 0.7}, 2}}
	r0 := []retrieve.Hit{{Index: 1}, {Index: 7}, {Index: 8}, {Index: 9}}
	got := m.ranking(scored, r0, map[int32]bool{1: true, 2: true, 3: true}, 10)
	var ids []int32
	for _, h := range got {
		ids = append(ids, h.Index)
	}
	if !slices.Equal(ids, []int32{3, 2, 1, 7, 8}) {
		t.Errorf("ranking %v, want [3 2 1 7 8] (later iteration first among ties; backfill capped at the budget)", ids)
	}
}
