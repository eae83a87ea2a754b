package graphops

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomTriGraph is a connected graph shaped like a Tri-Graph's PageRank
// graph: np passages in a chain, each joined to a few of ne entities
// (rare ones become leaves), and a dense restart over the passages plus
// a few seeded entities. Close restart weights make close scores, so the
// top of the ranking has small gaps.
func randomTriGraph(rng *rand.Rand, np, ne int) (*Adjacency, []float64) {
	var es []Edge
	for p := 0; p < np; p++ {
		if p+1 < np {
			es = append(es, Edge{Src: int32(p), Dst: int32(p + 1), W: 1})
		}
		for range 1 + rng.IntN(4) {
			e := np + int(float64(ne)*math.Pow(rng.Float64(), 2)) // popular entities first
			es = append(es, Edge{Src: int32(p), Dst: int32(e), W: 0.05 + rng.Float32()})
		}
	}
	for e := range ne { // no entity is left without a passage (dangling)
		es = append(es, Edge{Src: int32(rng.IntN(np)), Dst: int32(np + e), W: 0.05 + rng.Float32()})
	}
	g, err := Build(np+ne, es, false)
	if err != nil {
		panic(err)
	}
	a := Undirected(g, true, nil)
	reset := make([]float64, np+ne)
	for p := range np {
		reset[p] = 0.05 * (1 + rng.Float64()*rng.Float64())
	}
	for range 3 {
		reset[np+rng.IntN(ne)] += rng.Float64()
	}
	return a, reset
}

// ranked is the top k of the first n entries of x by float32 value, ties
// to the lower vertex (engine.TopK's order).
func ranked(x []float64, n, k int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	slices.SortStableFunc(ids, func(a, b int) int { return cmp.Compare(float32(x[b]), float32(x[a])) })
	return ids[:min(k, n)]
}

// TestSolveTopCertifiesTheExactRanking: a certified early stop ranks the
// top k as a solve to 1e-14 does, every entry within the stated bound of
// π, and it stops early often (the test would otherwise not test it).
func TestSolveTopCertifiesTheExactRanking(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	early := 0
	for trial := range 40 {
		np, ne := 50+rng.IntN(400), 20+rng.IntN(300)
		a, reset := randomTriGraph(rng, np, ne)
		pl := NewPPRPlan(a)
		if len(pl.dangling) > 0 {
			t.Fatalf("trial %d: the generator made a dangling vertex", trial)
		}
		d := []float64{0.5, 0.85}[trial%2]
		exact, _, err := pl.Solve(context.Background(), reset, PPROptions{Damping: d, Tol: 1e-14, MaxIter: 10000})
		if err != nil {
			t.Fatal(err)
		}
		o := PPROptions{Damping: d, Tol: 1e-10, MaxIter: 10000}
		_, plain, err := pl.Solve(context.Background(), reset, o)
		if err != nil {
			t.Fatal(err)
		}
		k := []int{1, 10, 100}[trial%3]
		got, st, err := pl.SolveTop(context.Background(), reset, o, np, k)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ranked(got, np, k), ranked(exact, np, k)) {
			t.Fatalf("trial %d (k %d, %d sweeps, certified %v): top %v, exact %v", trial, k, st.Sweeps, st.Certified, ranked(got, np, k), ranked(exact, np, k))
		}
		if !st.Certified {
			if st.Sweeps != plain {
				t.Fatalf("trial %d: uncertified after %d sweeps; Solve took %d", trial, st.Sweeps, plain)
			}
			continue
		}
		if st.Sweeps < plain {
			early++
		}
		for v := range exact {
			if math.Abs(got[v]-exact[v]) > st.Bound+1e-14 {
				t.Fatalf("trial %d: vertex %d is %v from π; bound %v", trial, v, math.Abs(got[v]-exact[v]), st.Bound)
			}
		}
	}
	if early < 20 {
		t.Fatalf("%d of 40 solves stopped early; want most", early)
	}
}

// TestSolveTopRunsToTolOnTies: two passages the graph cannot tell apart
// tie exactly, so their order is never certain and the solve runs to Tol
// (their order is then the vertex order's, as for Solve); so does a plan
// with dangling vertices.
func TestSolveTopRunsToTolOnTies(t *testing.T) {
	// Passages 0 and 1 hang symmetrically from entity 3; 2 from 4; 3–4 joined.
	es := []Edge{{Src: 0, Dst: 3, W: 1}, {Src: 1, Dst: 3, W: 1}, {Src: 0, Dst: 4, W: 1}, {Src: 1, Dst: 4, W: 1}, {Src: 2, Dst: 4, W: 2}, {Src: 3, Dst: 4, W: 1}}
	for _, dangling := range []bool{false, true} {
		n := 5
		if dangling {
			n = 6 // vertex 5 has no edge
		}
		g, err := Build(n, es, false)
		if err != nil {
			t.Fatal(err)
		}
		pl := NewPPRPlan(Undirected(g, true, nil))
		reset := make([]float64, n)
		reset[0], reset[1], reset[2] = 1, 1, 0.2
		o := PPROptions{Damping: 0.5, Tol: 1e-10, MaxIter: 1000}
		_, plain, err := pl.Solve(context.Background(), reset, o)
		if err != nil {
			t.Fatal(err)
		}
		got, st, err := pl.SolveTop(context.Background(), reset, o, 3, 2)
		if err != nil {
			t.Fatal(err)
		}
		if st.Certified || got[0] != got[1] || st.Sweeps != plain {
			t.Fatalf("dangling %v: %+v (Solve: %d sweeps), π %v", dangling, st, plain, got[:3])
		}
	}
}

// TestSolveTopWithHugeK: a k past the passages (a user's largest int)
// ranks them all, as the exact solve does, without overflowing k+1.
func TestSolveTopWithHugeK(t *testing.T) {
	a, reset := randomTriGraph(rand.New(rand.NewPCG(9, 9)), 300, 100)
	pl := NewPPRPlan(a)
	o := PPROptions{Damping: 0.5, Tol: 1e-10, MaxIter: 1000}
	exact, _, err := pl.Solve(context.Background(), reset, PPROptions{Damping: 0.5, Tol: 1e-14, MaxIter: 10000})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := pl.SolveTop(context.Background(), reset, o, 300, math.MaxInt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ranked(got, 300, 300), ranked(exact, 300, 300)) {
		t.Fatal("the full ranking differs from the exact solve's")
	}
}
