package seeder

import (
	"context"
	"math/rand/v2"
	"testing"
)

// askedRelation is a graph of 3 relations from the seed, 3 answers via each plus
// 20 two-hop nodes; the question's single word says which relation holds
// the answers.
func askedRelation(c Config, rels [][]float32, rng *rand.Rand) Example {
	const n = 60
	g := &Graph{Query: make([]float32, c.In)}
	asked := rng.IntN(3)
	g.Words = []int32{int32(asked)}
	for r := 0; r < 3; r++ {
		g.Rels = append(g.Rels, Relation{In: rels[r], ID: int32(r)}, Relation{In: rels[r], Inverse: true, ID: int32(r)})
	}
	var gold []int
	for i := 0; i < n; i++ {
		g.IDs = append(g.IDs, int32(i))
		g.NodeIn = append(g.NodeIn, randVec(c.In, rng)...)
		g.NodeCos = append(g.NodeCos, float32(rng.Float64()))
		g.Hops = append(g.Hops, min(i, 2))
	}
	perm := rng.Perm(n - 1)
	for j, v := range perm {
		v++
		switch {
		case j < 39:
			r := j % 3
			g.Edges = append(g.Edges, Edge{0, int32(v), int32(2 * r)}, Edge{int32(v), 0, int32(2*r + 1)})
			g.Hops[v] = 1
		default:
			u := 1 + perm[rng.IntN(39)]
			g.Edges = append(g.Edges, Edge{int32(u), int32(v), 0}, Edge{int32(v), int32(u), 1})
			g.Hops[v] = 2
		}
	}
	gold = gold[:0] // every neighbour by the asked relation
	for _, e := range g.Edges {
		if e.Src == 0 && int(e.Rel) == 2*asked {
			gold = append(gold, int(e.Dst))
		}
	}
	return Example{G: g, T: Target{Gold: gold, NumGold: len(gold)}}
}

// TestQueryConditioning: the question's words must steer the encoder.
// Three relations leave the seed, 13 neighbours each; the question's one
// word names the relation whose neighbours are the answers. With the
// words, dev Recall@13 reaches 1; without them the model can only guess
// (≈ 1/3 of the hop-1 nodes).
func TestQueryConditioning(t *testing.T) {
	for _, words := range []int{0, 3} {
		c := Config{In: 4, Hidden: 16, Heads: 2, Layers: 2, MaxHop: 2, Cycles: 2, Virtual: true, HopGate: true, Local: true, Words: words, Relations: 3, Seed: 1}
		rng := rand.New(rand.NewPCG(8, 8))
		rels := [][]float32{randVec(c.In, rng), randVec(c.In, rng), randVec(c.In, rng)}
		var train, dev []Example
		for i := 0; i < 120; i++ {
			train = append(train, askedRelation(c, rels, rng))
		}
		for i := 0; i < 30; i++ {
			dev = append(dev, askedRelation(c, rels, rng))
		}
		if words == 0 {
			for _, ex := range append(train, dev...) {
				ex.G.Words = nil
			}
		}
		o := DefaultTrainOptions()
		o.Epochs = 12
		o.Select = 13
		pca := &PCA{Mean: make([]float32, c.In), Components: identity(c.In), K: c.In}
		_, reps, err := Train(context.Background(), c, pca, o, train, dev, nil)
		if err != nil {
			t.Fatal(err)
		}
		best := 0.0
		for _, r := range reps {
			best = max(best, r.DevRecall)
		}
		if words > 0 && best < 1 || words == 0 && best > 0.5 {
			t.Errorf("with %d question words: best dev Recall@13 %.3f", words, best)
		}
	}
}
