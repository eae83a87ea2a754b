package retrieve

import (
	"math"
	"slices"
	"testing"
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

// Hand-computed fusions over four nodes.
func TestFusions(t *testing.T) {
	lex := []float32{1, 0.5, 0, 0}        // BM25 / max: node 2 and 3 match nothing
	vec := []float32{0.2, -0.2, 0.6, 0.2} // cosines: min −0.2, max 0.6
	got := convex(lex, vec, 0.7)
	want := []float32{0.7 + 0.3*0.5, 0.35, 0.3, 0.3 * 0.5}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Errorf("convex[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	// rrf, k = 60: BM25 ranks 0, 1 (2 and 3 unmatched); vector ranks 2, 0, 3, 1
	// (0 and 3 tie at 0.2: lower node first).
	r := rrf(lex, vec, 60, 1000)
	s := 61.0 / 2
	wantR := []float64{s * (1.0/61 + 1.0/62), s * (1.0/62 + 1.0/64), s / 61, s / 63}
	for i := range wantR {
		if math.Abs(float64(r[i])-wantR[i]) > 1e-6 {
			t.Errorf("rrf[%d] = %v, want %v", i, r[i], wantR[i])
		}
	}
	// depth 1: only each ranking's first counts.
	r1 := rrf(lex, vec, 60, 1)
	if r1[0] != 0.5 || r1[2] != 0.5 || r1[1] != 0 || r1[3] != 0 {
		t.Errorf("rrf at depth 1 = %v, want [0.5 0 0.5 0]", r1)
	}
	// one side missing: the other alone decides.
	if c := convex(nil, vec, 0.7); c[1] != 0 || math.Abs(float64(c[2])-0.3) > 1e-7 {
		t.Errorf("convex without BM25 = %v", c)
	}
}
