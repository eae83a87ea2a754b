package retrieve

import (
	"context"
	"math"
	"strings"
	"testing"
)

// Hand-computed fusions over four nodes.
func TestFusions(t *testing.T) {
	lex := []float32{1, 0.5, 0, 0}        // BM25 / max: node 2 and 3 match nothing
	vec := []float32{0.2, -0.2, 0.6, 0.2} // cosines: min −0.2, max 0.6
	got := convex(lex, vec, 0.7, nil)
	want := []float32{0.7 + 0.3*0.5, 0.35, 0.3, 0.3 * 0.5}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Errorf("convex[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	// rrf, k = 60: BM25 ranks 0, 1 (2 and 3 unmatched); vector ranks 2, 0, 3, 1
	// (0 and 3 tie at 0.2: lower node first).
	r := rrf(lex, vec, 60, 1000, nil)
	s := 61.0 / 2
	wantR := []float64{s * (1.0/61 + 1.0/62), s * (1.0/62 + 1.0/64), s / 61, s / 63}
	for i := range wantR {
		if math.Abs(float64(r[i])-wantR[i]) > 1e-6 {
			t.Errorf("rrf[%d] = %v, want %v", i, r[i], wantR[i])
		}
	}
	// depth 1: only each ranking's first counts.
	r1 := rrf(lex, vec, 60, 1, nil)
	if r1[0] != 0.5 || r1[2] != 0.5 || r1[1] != 0 || r1[3] != 0 {
		t.Errorf("rrf at depth 1 = %v, want [0.5 0 0.5 0]", r1)
	}
	// k near the largest int: node 0 (ranks 1 and 2) scores ≈ 1, as k+rank
	// must not wrap around.
	if rk := rrf(lex, vec, math.MaxInt-1, 1000, nil); math.Abs(float64(rk[0])-1) > 1e-6 {
		t.Errorf("rrf at k = MaxInt−1 scores node 0 %v, want ≈ 1", rk[0])
	}
	// one side missing: the other alone decides.
	if c := convex(nil, vec, 0.7, nil); c[1] != 0 || math.Abs(float64(c[2])-0.3) > 1e-7 {
		t.Errorf("convex without BM25 = %v", c)
	}
}

// Raw BM25 scores that dividing by the best makes equal rank by node
// number; a tie at the cut between equal raw scores is decided as BM25's
// search decides it, unless a neighbouring raw score (one not fetched)
// shares the quotient, which sends the caller to every node's scores.
func TestNormalisedTop(t *testing.T) {
	const best = float32(3)
	quotientShared := func(r float32) (below, above bool) {
		return math.Nextafter32(r, 0)/best == r/best, math.Nextafter32(r, 4)/best == r/best
	}
	find := func(below, above bool) float32 {
		for r := float32(1); r < 2; r = math.Nextafter32(r, 2) {
			if b, a := quotientShared(r); b == below && a == above {
				return r
			}
		}
		t.Fatalf("no raw score in [1, 2) with neighbours sharing its quotient below %v, above %v", below, above)
		return 0
	}
	// Distinct raw scores tied after dividing rank by node number.
	a := find(false, true)
	b := math.Nextafter32(a, 2)
	hits := []Hit{{Index: 0, Score: best}, {Index: 9, Score: b}, {Index: 4, Score: a}}
	top, ok := normalisedTop(hits, 3)
	if !ok || len(top) != 3 || top[1].Index != 4 || top[2].Index != 9 || top[1].Score != a/best {
		t.Fatalf("normalised top %v (ok %v): nodes 4 and 9 tie and rank by number", top, ok)
	}
	if _, ok := normalisedTop(hits, 2); ok {
		t.Fatal("a tie across the cut between different raw scores was accepted")
	}
	// Equal raw scores across the cut: decided, unless a raw score just
	// below (not fetched) could join the tie.
	alone := find(false, false)
	tied := []Hit{{Index: 0, Score: best}, {Index: 2, Score: alone}, {Index: 6, Score: alone}}
	if top, ok := normalisedTop(tied, 2); !ok || len(top) != 2 || top[1].Index != 2 {
		t.Fatalf("a raw tie at the cut: %v (ok %v)", top, ok)
	}
	under := find(true, false)
	tied[1].Score, tied[2].Score = under, under
	if _, ok := normalisedTop(tied, 2); ok {
		t.Fatal("a raw tie at the cut that a lower raw score could join was accepted")
	}
	if top, ok := normalisedTop(hits[:2], 1); !ok || len(top) != 1 || top[0].Index != 0 || top[0].Score != 1 {
		t.Fatalf("normalised top %v (ok %v)", top, ok)
	}
}

// TestHNSWCodesRefused: a graph build whose codes are neither int8 nor
// none (no flag can give one; a settings value set in code can) is refused
// before it reads the index, not built on the vectors unasked.
func TestHNSWCodesRefused(t *testing.T) {
	for _, c := range []string{"", "int4"} {
		s := DefaultHNSWSettings()
		s.Codes = c
		if _, _, err := builtHNSW(context.Background(), nil, s, nil, nil); err == nil || !strings.Contains(err.Error(), "codes") {
			t.Fatalf("codes %q: %v", c, err)
		}
	}
}
