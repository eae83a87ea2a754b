package graphops

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// randGraph: n vertices, random weighted edges (parallel edges allowed),
// the last vertex dangling.
func randGraph(t *testing.T, n, m int, seed uint64) *Graph {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	var es []Edge
	for i := 0; i < m; i++ {
		u, v := int32(rng.IntN(n-1)), int32(rng.IntN(n-1))
		if u != v {
			es = append(es, Edge{Src: u, Dst: v, W: float32(0.5 + rng.Float64())})
		}
	}
	g, err := Build(n, es, false)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// refPPR solves (I − d·M)π = (1−d)·r exactly, M the column-stochastic
// transition matrix with dangling columns replaced by r.
func refPPR(a *Adjacency, r []float64, d float64) []float64 {
	n := a.N()
	A := mat.NewDense(n, n, nil)
	for u := 0; u < n; u++ {
		for v := 0; v < n; v++ {
			if u == v {
				A.Set(v, u, 1)
			}
		}
		if a.Strength[u] == 0 {
			for v := 0; v < n; v++ {
				A.Set(v, u, A.At(v, u)-d*r[v])
			}
			continue
		}
		for p := a.Ptr[u]; p < a.Ptr[u+1]; p++ {
			v := int(a.Idx[p])
			A.Set(v, u, A.At(v, u)-d*a.Weight(p)/a.Strength[u])
		}
	}
	b := mat.NewVecDense(n, nil)
	for i := range r {
		b.SetVec(i, (1-d)*r[i])
	}
	var x mat.VecDense
	x.SolveVec(A, b)
	return x.RawVector().Data
}

func TestPPRMatchesLinearSolve(t *testing.T) {
	g := randGraph(t, 60, 150, 3)
	for _, weighted := range []bool{false, true} {
		a := Undirected(g, weighted, nil)
		for _, d := range []float64{0.5, 0.85} {
			r := make([]float64, 60)
			r[3], r[17], r[59] = 2, 1, 1 // a seed on the dangling vertex too
			got, it, err := PersonalizedPageRank(context.Background(), a, r, PPROptions{Damping: d, Tol: 1e-13, MaxIter: 1000})
			if err != nil {
				t.Fatal(err)
			}
			norm, _ := normalizedReset(60, r)
			want := refPPR(a, norm, d)
			var sum float64
			for i := range want {
				sum += got[i]
				if math.Abs(got[i]-want[i]) > 1e-11 {
					t.Fatalf("weighted=%v d=%v vertex %d: %v, want %v (after %d iterations)", weighted, d, i, got[i], want[i], it)
				}
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Errorf("sum %v", sum)
			}
		}
	}
}

func TestPPRErrors(t *testing.T) {
	a := Undirected(randGraph(t, 10, 20, 1), false, nil)
	ctx := context.Background()
	def := DefaultPPROptions()
	if _, _, err := PersonalizedPageRank(ctx, a, make([]float64, 10), def); err == nil {
		t.Error("zero reset accepted")
	}
	if _, _, err := PersonalizedPageRank(ctx, a, []float64{1}, def); err == nil {
		t.Error("short reset accepted")
	}
	for _, bad := range []PPROptions{{Damping: 1, Tol: 1e-10, MaxIter: 10}, {Damping: 0, Tol: 1e-10, MaxIter: 10},
		{Damping: 0.5, Tol: 0, MaxIter: 10}, {Damping: 0.5, Tol: 1e-10, MaxIter: 0}, {}} {
		if _, _, err := PersonalizedPageRank(ctx, a, nil, bad); err == nil {
			t.Errorf("%+v accepted: a zero or out-of-range setting must be an error, not a default", bad)
		}
	}
	if _, _, err := PersonalizedPageRank(ctx, a, nil, PPROptions{Damping: 0.85, MaxIter: 2, Tol: 1e-15}); err != ErrNoConvergence {
		t.Errorf("iteration cap: %v", err)
	}
	c, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := PersonalizedPageRank(c, a, nil, def); err == nil {
		t.Error("cancelled context ignored")
	}
}

func TestLocalPushBounds(t *testing.T) {
	// no dangling vertex reachable: connect everything through a ring
	n := 80
	var es []Edge
	rng := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < n; i++ {
		es = append(es, Edge{Src: int32(i), Dst: int32((i + 1) % n), W: 1})
		es = append(es, Edge{Src: int32(i), Dst: int32(rng.IntN(n)), W: 1})
	}
	g, _ := Build(n, es, false)
	a := Undirected(g, false, nil)
	reset := map[int32]float64{4: 1, 40: 3}
	dense := make([]float64, n)
	dense[4], dense[40] = 1, 3
	exact, _, err := PersonalizedPageRank(context.Background(), a, dense, PPROptions{Damping: 0.5, Tol: 1e-14, MaxIter: 1000})
	if err != nil {
		t.Fatal(err)
	}
	prevPushes := 0
	for _, eps := range []float64{1e-2, 1e-4, 1e-6} {
		res, err := LocalPPR(context.Background(), a, reset, 0.5, eps)
		if err != nil {
			t.Fatal(err)
		}
		var l1 float64
		for v := 0; v < n; v++ {
			diff := exact[v] - res.P[int32(v)]
			if diff < -1e-12 || diff > eps*a.Strength[v]+1e-12 {
				t.Fatalf("eps=%v vertex %d: exact %v, push %v (bound %v)", eps, v, exact[v], res.P[int32(v)], eps*a.Strength[v])
			}
			l1 += diff
		}
		if math.Abs(l1-res.Residual) > 1e-10 {
			t.Errorf("eps=%v: L1 error %v, residual %v", eps, l1, res.Residual)
		}
		if res.Pushes < prevPushes {
			t.Errorf("eps=%v: fewer pushes (%d) than at a larger eps (%d)", eps, res.Pushes, prevPushes)
		}
		prevPushes = res.Pushes
	}
}

func TestKHopAndPaths(t *testing.T) {
	// 0-1-2-3-4 path plus 1-5, 1-6
	es := []Edge{{Src: 0, Dst: 1}, {Src: 1, Dst: 2}, {Src: 2, Dst: 3}, {Src: 3, Dst: 4}, {Src: 1, Dst: 5}, {Src: 6, Dst: 1}}
	g, _ := Build(7, es, false)
	a := Undirected(g, false, nil)
	ctx := context.Background()
	nodes, hops, err := KHop(ctx, a, []int32{0}, KHopOptions{Hops: 2})
	if err != nil || !reflect.DeepEqual(nodes, []int32{0, 1, 2, 5, 6}) || !reflect.DeepEqual(hops, []int32{0, 1, 2, 2, 2}) {
		t.Errorf("2-hop: %v %v %v", nodes, hops, err)
	}
	score := func(v int32) float64 { return float64(v) }
	nodes, _, _ = KHop(ctx, a, []int32{0}, KHopOptions{Hops: 3, PerHopCap: 2, Score: score})
	if !reflect.DeepEqual(nodes, []int32{0, 1, 6, 5}) { // 2 is cut at hop 2, so 3 is never reached
		t.Errorf("capped, scored: %v", nodes)
	}
	nodes, _, _ = KHop(ctx, a, []int32{0, 0}, KHopOptions{Hops: 5, Budget: 3})
	if len(nodes) != 3 {
		t.Errorf("budget: %v", nodes)
	}
	b, err := ShortestPaths(ctx, a, []int32{0}, 0)
	if err != nil || !reflect.DeepEqual(b.Path(4), []int32{0, 1, 2, 3, 4}) || b.Dist[6] != 2 {
		t.Errorf("paths: %v %v", b.Path(4), err)
	}
	b, _ = ShortestPaths(ctx, a, []int32{0}, 2)
	if b.Path(4) != nil {
		t.Error("path beyond max hops")
	}
}

func TestInducedSubgraph(t *testing.T) {
	es := []Edge{{Src: 0, Dst: 1}, {Src: 1, Dst: 0}, {Src: 1, Dst: 2}, {Src: 2, Dst: 3}, {Src: 3, Dst: 3}, {Src: 0, Dst: 4}}
	g, _ := Build(5, es, false)
	s := Induced(g, []int32{3, 1, 0, 1})
	if !reflect.DeepEqual(s.Nodes, []int32{3, 1, 0}) || !reflect.DeepEqual(s.Ptr, []int64{0, 0, 1, 2}) || !reflect.DeepEqual(s.Idx, []int32{2, 1}) {
		t.Errorf("subgraph %+v", s)
	}
	if !reflect.DeepEqual(s.Deg, []float32{3, 3, 3}) {
		t.Errorf("global degrees %v", s.Deg)
	}
}
