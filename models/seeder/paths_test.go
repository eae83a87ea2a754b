package seeder

import (
	"context"
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
