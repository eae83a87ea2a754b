package seeder

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomPathGraph is n nodes with m KG edges of r relations, each stored
// from both ends.
func randomPathGraph(rng *rand.Rand, n, m, r int) *PathGraph {
	type e struct{ u, v, dir int32 }
	var es []e
	for range m {
		u, v, rel := int32(rng.IntN(n)), int32(rng.IntN(n)), int32(rng.IntN(r))
		es = append(es, e{u, v, 2 * rel}, e{v, u, 2*rel + 1})
	}
	slices.SortStableFunc(es, func(a, b e) int { return int(a.u - b.u) })
	g := &PathGraph{Ptr: make([]int64, n+1)}
	for _, x := range es {
		g.Ptr[x.u+1]++
		g.Dst, g.Dir = append(g.Dst, x.v), append(g.Dir, x.dir)
	}
	for i := 0; i < n; i++ {
		g.Ptr[i+1] += g.Ptr[i]
	}
	return g
}

// batchLoss is the batch's loss under the scorer's current weights.
func batchLoss(s *PathScorer, g *PathGraph, batch []PathExample) float64 {
	_, l := s.batchGrad(g, batch, 1)
	return l
}

func TestPathGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	c := PathConfig{Features: 9, Dim: 5, Relations: 3, Hops: 2, Seed: 7}
	g := randomPathGraph(rng, 14, 12, c.Relations)
	names := [][]int32{{6}, {7, 8}, {}}
	s, err := newPathScorer(c, names)
	if err != nil {
		t.Fatal(err)
	}
	var batch []PathExample
	for range 3 {
		batch = append(batch, PathExample{Feats: []int32{int32(rng.IntN(6)), int32(rng.IntN(6)), 6}, Seeds: []int32{int32(rng.IntN(14))}, Gold: []int32{int32(rng.IntN(14)), int32(rng.IntN(14))}})
	}
	grad, _ := s.batchGrad(g, batch, 1)
	var gs [][]float64
	grad.each(c, func(_ string, _ []int, p *[]float64) { gs = append(gs, *p) })
	k, checked := 0, 0
	s.W.each(c, func(name string, _ []int, p *[]float32) {
		for _, i := range []int{0, len(*p) / 2, len(*p) - 1} {
			old := (*p)[i]
			const h = 1e-4
			(*p)[i] = old + h
			up := batchLoss(s, g, batch)
			(*p)[i] = old - h
			down := batchLoss(s, g, batch)
			(*p)[i] = old
			// the step is rounded to float32: divide by the step taken
			fd := (up - down) / (float64(old+h) - float64(old-h))
			an := gs[k][i]
			if math.Abs(fd-an) > 1e-3+1e-2*math.Abs(fd) {
				t.Errorf("%s[%d]: analytic %g, finite difference %g", name, i, an, fd)
			}
			checked++
		}
		k++
	})
	if checked < 20 {
		t.Fatalf("checked %d entries", checked)
	}
}

// TestTrainPathsLearnsTemplates: questions name two relations by words
// ("r1 of the r0 of e"), the answer is the node those hops reach; the
// scorer must learn which word means which relation at which hop.
func TestTrainPathsLearnsTemplates(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const n, rels = 300, 4
	g := randomPathGraph(rng, n, 900, rels)
	// follow returns the nodes one hop along dir from u
	follow := func(u int32, dir int32) []int32 {
		var out []int32
		for e := g.Ptr[u]; e < g.Ptr[u+1]; e++ {
			if g.Dir[e] == dir {
				out = append(out, g.Dst[e])
			}
		}
		return out
	}
	// features: word for relation r at hop h is 2r+h (so order matters)
	var exs []PathExample
	for len(exs) < 700 {
		seed := int32(rng.IntN(n))
		r0, r1 := int32(rng.IntN(rels)), int32(rng.IntN(rels))
		var gold []int32
		for _, m := range follow(seed, 2*r0) {
			gold = append(gold, follow(m, 2*r1)...)
		}
		if len(gold) == 0 || len(gold) > 3 {
			continue
		}
		exs = append(exs, PathExample{Feats: []int32{2 * r0, 2*r1 + 1}, Seeds: []int32{seed}, Gold: gold})
	}
	c := PathConfig{Features: 2 * rels, Dim: 16, Relations: rels, Hops: 2, Seed: 1}
	names := make([][]int32, rels)
	o := DefaultPathTrainOptions()
	o.Epochs, o.LR = 8, 1e-2
	s, reps, err := TrainPaths(context.Background(), c, names, g, exs[:600], exs[600:], o, nil)
	if err != nil {
		t.Fatal(err)
	}
	last := reps[len(reps)-1]
	if reps[0].Loss <= last.Loss {
		t.Errorf("loss did not fall: %+v", reps)
	}
	// the upper bound: a gold set of up to 3 ties; the best node is gold
	// unless a non-gold node ties it
	if h := s.hits1(g, exs[600:], 2); h < 0.9 {
		t.Errorf("dev hits@1 %.3f after training, want ≥ 0.9 (%+v)", h, reps)
	}
}

// TestSpreadRenormalises: the reading is renormalised over the directions
// leaving the walk's frontier, so mass is not lost to relations no node
// on the walk has, while a frontier node whose own relation the reading
// disbelieves still passes almost nothing.
func TestSpreadRenormalises(t *testing.T) {
	// 0 → 1 along r0 and 0 → 2 along r1 (forward); 1 → 3 along r0, 2 → 4 along r2
	g := &PathGraph{Ptr: []int64{0, 2, 3, 4, 4, 4}, Dst: []int32{1, 2, 3, 4}, Dir: []int32{0, 2, 0, 4}}
	// hop 1 believes r3 (no node has it), then r0 a little over r1; hop 2 r0 over r2
	p := &Paths{P: [][]float64{{0.03, 0, 0.01, 0, 0, 0, 0.96, 0}, {0.999, 0, 0, 0, 0.001, 0, 0, 0}}, Alpha: []float64{0, 1}}
	sp := p.Spread(g, []int32{0}, nil)
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-12 }
	if !near(sp.X[1][1], 0.75) || !near(sp.X[1][2], 0.25) {
		t.Fatalf("hop 1 mass %v, want 0.75 on 1 and 0.25 on 2", sp.X[1])
	}
	if !near(sp.X[2][3], 0.75*0.999) || !near(sp.X[2][4], 0.25*0.001) {
		t.Fatalf("hop 2 mass %v, want %g on 3 and %g on 4", sp.X[2], 0.75*0.999, 0.25*0.001)
	}
	if v, ok := sp.Best(); !ok || v != 3 {
		t.Fatalf("best %d, want 3", v)
	}
}

// TestSpreadBackward checks back against central differences in P and α
// directly (no softmax to hide a shift common to every direction), on a
// hand graph with a frontier of several but not all directions, a
// duplicate edge that pushes a node's mass past the clip, and a keep that
// drops one direction's only destination.
func TestSpreadBackward(t *testing.T) {
	// 0 → 1 twice (dir 0), 0 → 2 (dir 0), 0 → 3 (dir 2), 0 → 7 (dir 4; 7 is not kept);
	// 1 → 4 (dir 1), 2 → 4 (dir 3), 2 → 5 (dir 3), 3 → 5 (dir 1), 3 → 6 (dir 2)
	g := &PathGraph{
		Ptr: []int64{0, 5, 6, 8, 10, 10, 10, 10, 10},
		Dst: []int32{1, 1, 2, 3, 7, 4, 4, 5, 5, 6},
		Dir: []int32{0, 0, 0, 2, 4, 1, 3, 3, 1, 2},
	}
	if err := g.Validate(6); err != nil {
		t.Fatal(err)
	}
	keep := func(v int32) bool { return v != 7 }
	p := &Paths{P: [][]float64{{0.5, 0.1, 0.3, 0.2, 0.9, 0.4}, {0.2, 0.6, 0.25, 0.3, 0.1, 0.7}}, Alpha: []float64{0.4, 0.6}}
	w := []float64{0.3, -0.7, 0.5, 1.1, -0.4, 0.9, 0.2, 2}
	loss := func() float64 {
		sp := p.spread(g, []int32{0}, keep, 0)
		var l float64
		for v, y := range sp.Y {
			l += w[v] * y
		}
		return l
	}
	sp := p.spread(g, []int32{0}, keep, 0)
	if sp.sum[1][1] <= 1 || sp.X[1][1] != 1 {
		t.Fatalf("node 1's mass %g (before the clip %g) should be clipped at 1", sp.X[1][1], sp.sum[1][1])
	}
	norm := &dirNorm{}
	if s := norm.total(g, sp, sp.Active[1], p.P[1]); len(norm.dirs) < 2 || len(norm.dirs) >= 6 || s <= 0 {
		t.Fatalf("hop 2's frontier has directions %v: want several, not all", norm.dirs)
	}
	dP, dA := sp.back(g, p, w)
	const h = 1e-6
	check := func(name string, x *float64, got float64) {
		old := *x
		*x = old + h
		up := loss()
		*x = old - h
		down := loss()
		*x = old
		if num := (up - down) / (2 * h); math.Abs(num-got) > 1e-7*max(1, math.Abs(num)) {
			t.Errorf("%s: backward %.9g, central difference %.9g", name, got, num)
		}
	}
	for ti := range p.P {
		for d := range p.P[ti] {
			check(fmt.Sprintf("P[%d][%d]", ti, d), &p.P[ti][d], dP[ti][d])
		}
		check(fmt.Sprintf("alpha[%d]", ti), &p.Alpha[ti], dA[ti])
	}
}

// TestSpreadUnscoredDirection: an edge whose direction the reading does
// not score (a relation added after training) carries nothing.
func TestSpreadUnscoredDirection(t *testing.T) {
	g := &PathGraph{Ptr: []int64{0, 2, 2, 2}, Dst: []int32{1, 2}, Dir: []int32{0, 7}}
	p := &Paths{P: [][]float64{{0.4, 0.6}}, Alpha: []float64{1}}
	sp := p.Spread(g, []int32{0}, nil)
	if sp.X[1][1] != 1 || sp.X[1][2] != 0 {
		t.Fatalf("mass %v, want 1 on node 1 and none on 2", sp.X[1])
	}
}
