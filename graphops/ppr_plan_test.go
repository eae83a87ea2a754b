package graphops

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestPPRPlanMatchesPersonalizedPageRank: leaf elimination changes the work,
// not the fixed point, on graphs with leaves, leaf pairs, parallel edges,
// self-loops and isolated (dangling) vertices.
func TestPPRPlanMatchesPersonalizedPageRank(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	lengths := map[int64]bool{} // core row lengths met: each of sweep's loops runs
	for trial := 0; trial < 30; trial++ {
		n := 5 + rng.IntN(60)
		var es []Edge
		core := 2 + rng.IntN(n/2)
		for i := 0; i < core*2; i++ { // a core with cycles, parallel edges, self-loops
			es = append(es, Edge{Src: int32(rng.IntN(core)), Dst: int32(rng.IntN(core)), W: 0.1 + rng.Float32()})
		}
		for v := core; v < n-2; v++ { // leaves (some hang from other leaves: chains)
			if rng.IntN(5) > 0 {
				es = append(es, Edge{Src: int32(v), Dst: int32(rng.IntN(v)), W: 0.1 + rng.Float32()})
			}
		}
		es = append(es, Edge{Src: int32(n - 2), Dst: int32(n - 1), W: 1}) // a two-leaf pair
		g, err := Build(n, es, false)
		if err != nil {
			t.Fatal(err)
		}
		a := Undirected(g, true, nil)
		reset := make([]float64, n)
		for i := range reset {
			if rng.IntN(3) == 0 {
				reset[i] = rng.Float64()
			}
		}
		reset[rng.IntN(n)] += 1
		o := PPROptions{Damping: []float64{0.5, 0.85}[trial%2], Tol: 1e-13, MaxIter: 10000}
		want, _, err := PersonalizedPageRank(context.Background(), a, reset, o)
		if err != nil {
			t.Fatal(err)
		}
		pl := NewPPRPlan(a)
		for k := range pl.core {
			lengths[min(pl.ptr[k+1]-pl.ptr[k], 5)] = true
		}
		other := o // a solve of another damping first: the plan's scratch and factors are reused
		other.Damping = 1.3 - o.Damping
		if _, _, err := pl.Solve(context.Background(), reset, other); err != nil {
			t.Fatal(err)
		}
		got, _, err := pl.Solve(context.Background(), reset, o)
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for v := range want {
			sum += got[v]
			if math.Abs(got[v]-want[v]) > 1e-10 {
				t.Fatalf("trial %d (n %d, core %d of %d): vertex %d: plan %v, power iteration %v", trial, n, pl.Core(), n, v, got[v], want[v])
			}
		}
		if math.Abs(sum-1) > 1e-10 {
			t.Fatalf("trial %d: π sums to %v", trial, sum)
		}
	}
	if len(lengths) != 6 {
		t.Fatalf("core rows of lengths %v (5: five or more); want 0 to 5", lengths)
	}
}

func TestPPRPlanRejectsBadInput(t *testing.T) {
	g, _ := Build(3, []Edge{{Src: 0, Dst: 1, W: 1}}, false)
	pl := NewPPRPlan(Undirected(g, true, nil))
	for _, tc := range []struct {
		reset []float64
		o     PPROptions
	}{
		{[]float64{1, 0}, DefaultPPROptions()},
		{[]float64{0, 0, 0}, DefaultPPROptions()},
		{[]float64{1, -1, 0}, DefaultPPROptions()},
		{[]float64{1, 0, 0}, PPROptions{Damping: 1, Tol: 1e-10, MaxIter: 10}},
	} {
		if _, _, err := pl.Solve(context.Background(), tc.reset, tc.o); err == nil {
			t.Errorf("reset %v, options %+v: no error", tc.reset, tc.o)
		}
	}
}

// TestPPRPlanOrdersCoreByDegree: the core is numbered by degree within
// the core, then by id (what keeps a sweep's inner loop predictable).
func TestPPRPlanOrdersCoreByDegree(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	n := 400
	var es []Edge
	for i := 0; i < 1200; i++ {
		es = append(es, Edge{Src: int32(rng.IntN(n)), Dst: int32(rng.IntN(n / (1 + rng.IntN(8)))), W: 1})
	}
	g, err := Build(n, es, false)
	if err != nil {
		t.Fatal(err)
	}
	a := Undirected(g, true, nil)
	pl := NewPPRPlan(a)
	deg := func(k int) int64 { return pl.ptr[k+1] - pl.ptr[k] }
	for k := 1; k < len(pl.core); k++ {
		if deg(k-1) > deg(k) || deg(k-1) == deg(k) && pl.core[k-1] > pl.core[k] {
			t.Fatalf("core positions %d, %d: vertices %d, %d of core degrees %d, %d", k-1, k, pl.core[k-1], pl.core[k], deg(k-1), deg(k))
		}
		if pl.coreOf[pl.core[k]] != int32(k) {
			t.Fatalf("coreOf[%d] = %d, want %d", pl.core[k], pl.coreOf[pl.core[k]], k)
		}
	}
	if pl.Core() < n/2 {
		t.Fatalf("core %d of %d: the graph should be mostly core", pl.Core(), n)
	}
}

// TestPPRPlanConcurrentDampings: one plan serves solves of several
// dampings at once (its per-damping factors and scratch are shared), each
// equal to power iteration's.
func TestPPRPlanConcurrentDampings(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 4))
	n := 300
	var es []Edge
	for i := 0; i < 500; i++ {
		es = append(es, Edge{Src: int32(rng.IntN(n)), Dst: int32(rng.IntN(n / 3)), W: 0.5 + rng.Float32()})
	}
	g, err := Build(n, es, false)
	if err != nil {
		t.Fatal(err)
	}
	a := Undirected(g, true, nil)
	pl := NewPPRPlan(a)
	dampings := []float64{0.5, 0.85, 0.3}
	want := make([][]float64, len(dampings))
	resets := make([][]float64, len(dampings))
	for i, d := range dampings {
		resets[i] = make([]float64, n)
		for j := 0; j < 5; j++ {
			resets[i][rng.IntN(n)] += rng.Float64() + 0.1
		}
		if want[i], _, err = PersonalizedPageRank(context.Background(), a, resets[i], PPROptions{Damping: d, Tol: 1e-13, MaxIter: 10000}); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 24)
	for g := 0; g < 24; g++ {
		go func() {
			i := g % len(dampings)
			got, _, err := pl.Solve(context.Background(), resets[i], PPROptions{Damping: dampings[i], Tol: 1e-13, MaxIter: 10000})
			if err == nil {
				for v := range got {
					if math.Abs(got[v]-want[i][v]) > 1e-10 {
						err = fmt.Errorf("damping %v, vertex %d: plan %v, power iteration %v", dampings[i], v, got[v], want[i][v])
						break
					}
				}
			}
			errs <- err
		}()
	}
	for range 24 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestPPRPlanZeroWeightLeaf: a vertex joined only by edges of weight 0 is
// dangling, not a leaf (it restarts by the reset, as PersonalizedPageRank
// has it), so the plan and SolveTop agree with power iteration.
func TestPPRPlanZeroWeightLeaf(t *testing.T) {
	g, err := Build(4, []Edge{{Src: 0, Dst: 1, W: 1}, {Src: 1, Dst: 2, W: 1}, {Src: 2, Dst: 3, W: 0}}, false)
	if err != nil {
		t.Fatal(err)
	}
	a := Undirected(g, true, nil)
	reset := []float64{0.1, 0.1, 0.1, 1}
	o := PPROptions{Damping: 0.5, Tol: 1e-13, MaxIter: 10000}
	want, _, err := PersonalizedPageRank(context.Background(), a, reset, o)
	if err != nil {
		t.Fatal(err)
	}
	pl := NewPPRPlan(a)
	got, _, err := pl.Solve(context.Background(), reset, o)
	if err != nil {
		t.Fatal(err)
	}
	top, _, err := pl.SolveTop(context.Background(), reset, o, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	for v := range want {
		if math.Abs(got[v]-want[v]) > 1e-10 || math.Abs(top[v]-want[v]) > 1e-10 {
			t.Fatalf("vertex %d: plan %v, SolveTop %v, power iteration %v", v, got[v], top[v], want[v])
		}
	}
}
