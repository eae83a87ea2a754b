package graphops

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRewriteEqualsBuild checks Rewrite against Build over the edge list
// it stands for, on random graphs with dropped rows, dropped and
// re-pointed entries, duplicate edges and added edges in any order.
func TestRewriteEqualsBuild(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	patched := 0
	for trial := range 400 {
		oldN := 1 + rng.IntN(40)
		old, err := Build(oldN, randomEdges(rng, oldN, rng.IntN(120)), true)
		if err != nil {
			t.Fatal(err)
		}
		rowOf, n := randomRows(rng, oldN)
		if trial%2 == 1 { // numbers kept, as deletes in place keep them: the in rows are patched
			rowOf, n = rowsInPlace(rng, oldN)
			patched++
		}
		target := make([]int32, oldN) // where each old vertex's entries point (−1: dropped)
		for u := range target {
			target[u] = rowOf[u]
			if target[u] < 0 && n > 0 && rng.IntN(2) == 0 {
				target[u] = int32(rng.IntN(n)) // re-pointed, as a replaced document's edges are
			}
		}
		drop := rng.IntN(4) // every drop-th entry is dropped (0: none)
		keep := func(u int, p int64) (int32, bool) {
			if drop > 0 && p%int64(drop) == 0 {
				return 0, false
			}
			d := target[old.Out.Idx[p]]
			return d, d >= 0
		}
		if n == 0 {
			continue
		}
		added := randomEdges(rng, n, rng.IntN(30))
		var want []Edge
		for u := range oldN {
			for p := old.Out.Ptr[u]; p < old.Out.Ptr[u+1]; p++ {
				if d, ok := keep(u, p); ok && rowOf[u] >= 0 {
					want = append(want, Edge{Src: rowOf[u], Dst: d, W: old.Out.W[p], Rel: old.Out.Rel[p]})
				}
			}
		}
		want = append(want, added...)
		wg, err := Build(n, want, true)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Rewrite(context.Background(), old, n, rowOf, keep, added)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		for dir, pair := range [][2]*CSR{{&got.Out, &wg.Out}, {&got.In, &wg.In}} {
			if !sameCSR(pair[0], pair[1]) {
				t.Fatalf("trial %d direction %d: rewrite\n%+v\nbuild\n%+v", trial, dir, *pair[0], *pair[1])
			}
		}
	}
}

// rowsInPlace keeps each old row's number or drops it, and adds up to 4
// rows after them.
func rowsInPlace(rng *rand.Rand, oldN int) ([]int32, int) {
	rowOf := make([]int32, oldN)
	for u := range rowOf {
		rowOf[u] = int32(u)
		if rng.IntN(5) == 0 {
			rowOf[u] = -1
		}
	}
	return rowOf, oldN + rng.IntN(5)
}

// randomEdges has repeated pairs with different weights and relations, so
// that the order of equal keys is checked too.
func randomEdges(rng *rand.Rand, n, m int) []Edge {
	var es []Edge
	for range m {
		e := Edge{Src: int32(rng.IntN(n)), Dst: int32(rng.IntN(n)), W: float32(rng.IntN(5)), Rel: int32(rng.IntN(3))}
		es = append(es, e)
		if rng.IntN(5) == 0 {
			e.W++
			es = append(es, e)
		}
	}
	return es
}

// randomRows drops some old rows and numbers the rest in a random order
// among n ≥ kept rows (the rest of the n are new, with no old row).
func randomRows(rng *rand.Rand, oldN int) ([]int32, int) {
	n := rng.IntN(oldN + 5)
	slots := rng.Perm(n)
	rowOf := make([]int32, oldN)
	for u := range rowOf {
		rowOf[u] = -1
		if len(slots) > 0 && rng.IntN(4) > 0 {
			rowOf[u], slots = int32(slots[0]), slots[1:]
		}
	}
	return rowOf, n
}

func sameCSR(a, b *CSR) bool {
	return slices.Equal(a.Ptr, b.Ptr) && slices.Equal(a.Idx, b.Idx) && slices.Equal(a.W, b.W) && slices.Equal(a.Rel, b.Rel)
}

func TestRewriteRefusesBadRows(t *testing.T) {
	old, err := Build(3, []Edge{{Src: 0, Dst: 1, W: 1}}, true)
	if err != nil {
		t.Fatal(err)
	}
	keep := func(u int, p int64) (int32, bool) { return old.Out.Idx[p], true }
	for name, rowOf := range map[string][]int32{"two rows as one": {0, 0, 1}, "outside": {0, 1, 3}, "short": {0, 1}} {
		if _, err := Rewrite(context.Background(), old, 3, rowOf, keep, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := Rewrite(context.Background(), old, 3, []int32{0, 1, 2}, keep, []Edge{{Src: 0, Dst: 3}}); err == nil {
		t.Error("an added edge outside the vertices: no error")
	}
	if _, err := Rewrite(context.Background(), old, -1, []int32{-1, -1, -1}, keep, nil); err == nil {
		t.Error("a negative vertex count: no error")
	}
	if _, err := Rewrite(context.Background(), old, 1, []int32{0, -1, -1}, keep, nil); err == nil {
		t.Error("an entry kept as a vertex outside: no error")
	}
}

// An old graph without relation ids reads as relation 0 throughout.
func TestRewriteWithoutRelations(t *testing.T) {
	old, err := Build(3, []Edge{{Src: 0, Dst: 2, W: 1}, {Src: 2, Dst: 1, W: 2}}, true)
	if err != nil {
		t.Fatal(err)
	}
	old.Out.Rel = nil
	keep := func(u int, p int64) (int32, bool) { return old.Out.Idx[p], true }
	added := []Edge{{Src: 0, Dst: 1, W: 3, Rel: 1}}
	got, err := Rewrite(context.Background(), old, 3, []int32{0, 1, 2}, keep, added)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Build(3, []Edge{{Src: 0, Dst: 2, W: 1}, {Src: 2, Dst: 1, W: 2}, {Src: 0, Dst: 1, W: 3, Rel: 1}}, true)
	if !sameCSR(&got.Out, &want.Out) || !sameCSR(&got.In, &want.In) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if g, err := Rewrite(context.Background(), &Graph{Out: CSR{Ptr: []int64{0}}}, 0, nil, keep, nil); err != nil || g.Out.N() != 0 || g.In.N() != 0 {
		t.Errorf("an empty graph: %+v, %v", g, err)
	}
}
