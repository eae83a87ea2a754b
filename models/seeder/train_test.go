package seeder

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPlackettLuceGradient checks ∂log P(ranking)/∂p against central
// differences, including the step where little mass is left.
func TestPlackettLuceGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	p := make([]float64, 30)
	for i := range p {
		p[i] = 3 * rng.NormFloat64()
	}
	eligible := []int{0, 2, 3, 5, 7, 8, 11, 13, 17, 19, 23, 29}
	for _, temp := range []float64{1, 0.5} {
		ranking := gumbelTopK(p, eligible, 12, temp, rng) // the whole set: the last step has one row left
		dP := make([]float64, len(p))
		plLogProb(p, eligible, ranking, temp, dP, 1)
		for i := range p {
			const h = 1e-6
			x := p[i]
			p[i] = x + h
			up := plLogProb(p, eligible, ranking, temp, make([]float64, len(p)), 1)
			p[i] = x - h
			down := plLogProb(p, eligible, ranking, temp, make([]float64, len(p)), 1)
			p[i] = x
			if fd := (up - down) / (2 * h); math.Abs(fd-dP[i]) > 1e-6 {
				t.Errorf("τ %g: ∂logP/∂p[%d] = %.9g, finite difference %.9g", temp, i, dP[i], fd)
			}
		}
	}
}

func TestRankingLossGradients(t *testing.T) {
	for name, loss := range map[string]func(s []float64, eligible []int, gold map[int]bool, dS []float64, coef float64) float64{"bpr": bpr, "listwise": listwise} {
		rng := rand.New(rand.NewPCG(5, 3))
		s := make([]float64, 10)
		for i := range s {
			s[i] = rng.NormFloat64()
		}
		eligible := []int{1, 2, 3, 4, 6, 9}
		gold := map[int]bool{2: true, 6: true, 7: true}
		dS := make([]float64, len(s))
		loss(s, eligible, gold, dS, 1)
		for i := range s {
			const h = 1e-6
			x := s[i]
			s[i] = x + h
			up := loss(s, eligible, gold, make([]float64, len(s)), 1)
			s[i] = x - h
			down := loss(s, eligible, gold, make([]float64, len(s)), 1)
			s[i] = x
			if fd := (up - down) / (2 * h); math.Abs(fd-dS[i]) > 1e-7 {
				t.Errorf("%s: ∂L/∂s[%d] = %.9g, finite difference %.9g", name, i, dS[i], fd)
			}
		}
	}
}

// relationPuzzle is a graph where the 3 answers are the seed's neighbours
// by relation A among 30 neighbours by relation B, 26 more nodes two hops
// away: hop numbers cannot tell them apart, only the edge type can.
func relationPuzzle(c Config, relA, relB []float32, rng *rand.Rand) Example {
	const n = 60
	g := &Graph{Query: randVec(c.In, rng)}
	g.Rels = []Relation{{In: relA, Cos: 0.5}, {In: relA, Cos: 0.5, Inverse: true}, {In: relB}, {In: relB, Inverse: true}}
	perm := rng.Perm(n - 1)
	var gold []int
	for i := 0; i < n; i++ {
		g.IDs = append(g.IDs, int32(i))
		g.NodeIn = append(g.NodeIn, randVec(c.In, rng)...)
		g.NodeCos = append(g.NodeCos, float32(rng.Float64()))
		g.Eligible = append(g.Eligible, i > 0)
		hop := 2
		if i == 0 {
			hop = 0
		}
		g.Hops = append(g.Hops, hop)
	}
	link := func(a, b int, rel int32) {
		g.Edges = append(g.Edges, Edge{int32(a), int32(b), rel}, Edge{int32(b), int32(a), rel + 1})
	}
	for j, v := range perm {
		v++ // rows 1..59 in random order
		switch {
		case j < 3:
			link(0, v, 0)
			gold = append(gold, v)
			g.Hops[v] = 1
		case j < 33:
			link(0, v, 2)
			g.Hops[v] = 1
		default:
			link(1+perm[rng.IntN(33)], v, 2)
		}
	}
	slices.Sort(gold)
	return Example{G: g, T: Target{Gold: gold, NumGold: 3}}
}

// TestTrainingSolvesSyntheticKG trains on relation puzzles until dev
// Recall@20 is 1 (chance ≈ 0.34; hop numbers alone ≈ 0.61).
func TestTrainingSolvesSyntheticKG(t *testing.T) {
	c := Config{In: 4, Hidden: 16, Heads: 2, Layers: 2, MaxHop: 2, Cycles: 2, Virtual: true, HopGate: true, Seed: 1}
	rng := rand.New(rand.NewPCG(8, 8))
	relA, relB := randVec(c.In, rng), randVec(c.In, rng)
	var train, dev []Example
	for i := 0; i < 96; i++ {
		train = append(train, relationPuzzle(c, relA, relB, rng))
	}
	for i := 0; i < 24; i++ {
		dev = append(dev, relationPuzzle(c, relA, relB, rng))
	}
	o := DefaultTrainOptions()
	o.Epochs, o.LR = 25, 3e-3
	pca := &PCA{Mean: make([]float32, c.In), Components: identity(c.In), K: c.In}
	m, reps, err := Train(context.Background(), c, pca, o, train, dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	best := 0.0
	for _, r := range reps {
		best = math.Max(best, r.DevRecall)
		t.Logf("epoch %d loss %.4f reward %.3f dev recall@20 %.3f", r.Epoch, r.Loss, r.Reward, r.DevRecall)
	}
	got, _, err := DevMetrics(context.Background(), m, dev, 20)
	if err != nil {
		t.Fatal(err)
	}
	if got != best || got != 1 {
		t.Fatalf("kept model's dev Recall@20 = %g (best epoch %g), want 1", got, best)
	}
}

func identity(n int) []float32 {
	m := make([]float32, n*n)
	for i := 0; i < n; i++ {
		m[i*n+i] = 1
	}
	return m
}
