package graphops

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/kernels/cpu"
)

// tinyTriGraph builds a Tri-Graph of ne entities from sentences (lists of
// entity ids), with W rows given directly (nil: none).
func tinyTriGraph(ne int, sentences [][]int32, w map[int32][][2]float64) *TriGraph {
	t := &TriGraph{Entities: make([]string, ne), Sentences: len(sentences)}
	t.SentEnts = RowsCSR(sentences)
	t.EntSents = Transpose(t.SentEnts, ne)
	rows := make([][]cand, ne)
	for e, r := range w {
		for _, x := range r {
			rows[e] = append(rows[e], cand{j: int32(x[0]), w: x[1]})
		}
	}
	t.W = rowsToCSR(rows)
	return t
}

func constSim(v float32) func(int32) float32 { return func(int32) float32 { return v } }

// near compares within float32 precision: similarities and W's weights
// are float32 (2⁻²⁴ relative), products of two of them carry a few ulps.
func near(a, b float64) bool { return math.Abs(a-b) <= 4*0x1p-24*max(1, math.Abs(b)) }

// TestNeighbourMatrixByHand checks W (§2.3) on five entities worked out by
// hand: co-occurrence normalised by the row's max, similarities clamped at
// 0 and min–max normalised over all candidates (a co-occurrence-only
// candidate counting 0; all equal → ones), τ, then the κ cap with ties to
// the lower id.
func TestNeighbourMatrixByHand(t *testing.T) {
	tg := tinyTriGraph(5, [][]int32{{0, 1, 2}, {0, 1}, {0, 3}, {3, 4}}, nil)
	vecs := []float32{1, 0, 0.6, 0.8, 0, 1, 0.8, 0.6, -1, 0}
	o := NeighbourOptions{CoShare: 1, CoCap: 200, SimTopK: 2, Kappa: 2, Alpha: 0.5, Threshold: 0.5}
	if err := tg.BuildNeighbours(context.Background(), cpu.New(), vecs, 2, o); err != nil {
		t.Fatal(err)
	}
	want := map[int][][2]float64{
		// e0: co {e1:2, e2:1, e3:1} → top2 e1, e2; sim top2 e3 .8, e1 .6.
		// C = {e1, e2, e3}: co (2, 1, 0)/2; sim minmax(.6, 0, .8) =
		// (.75, 0, 1); w = (.875, .25, .5).
		0: {{1, 0.875}, {3, 0.5}},
		// e4: co {e3:1}; sims e2 0, e1 −.6. C = {e1, e2, e3}: co (0, 0, 1);
		// sims clamped (0, 0, 0) are all equal → ones; w = (.5, .5, 1);
		// κ = 2 keeps e3 and the lower of the tied e1, e2.
		4: {{3, 1}, {1, 0.5}},
	}
	for e, row := range want {
		lo, hi := tg.W.Ptr[e], tg.W.Ptr[e+1]
		if int(hi-lo) != len(row) {
			t.Fatalf("W[%d] = %v %v, want %v", e, tg.W.Idx[lo:hi], tg.W.W[lo:hi], row)
		}
		for i, x := range row {
			if tg.W.Idx[lo+int64(i)] != int32(x[0]) || !near(float64(tg.W.W[lo+int64(i)]), x[1]) {
				t.Fatalf("W[%d] = %v %v, want %v", e, tg.W.Idx[lo:hi], tg.W.W[lo:hi], row)
			}
		}
	}
	// The 10% pruning keeps max(1, ⌊0.1·3⌋) = 1 co-occurring entity of e0
	// (e1): C = {e1, e3}, co (1, 0), sim minmax(.6, .8) = (0, 1): both .5.
	o.CoShare = 0.1
	if err := tg.BuildNeighbours(context.Background(), cpu.New(), vecs, 2, o); err != nil {
		t.Fatal(err)
	}
	if got := tg.W.Idx[tg.W.Ptr[0]:tg.W.Ptr[1]]; len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Fatalf("W[0] with the 10%% pruning = %v, want [1 3]", got)
	}
}

// TestNeighbourMatrixZeroVector: an entity the embedder cannot represent
// takes neighbours from co-occurrence only (its similarities, all 0,
// normalise to ones).
func TestNeighbourMatrixZeroVector(t *testing.T) {
	tg := tinyTriGraph(3, [][]int32{{0, 1}}, nil)
	vecs := []float32{0, 0, 1, 0, 1, 0}
	o := DefaultNeighbourOptions()
	if err := tg.BuildNeighbours(context.Background(), cpu.New(), vecs, 2, o); err != nil {
		t.Fatal(err)
	}
	if got := tg.W.Idx[tg.W.Ptr[0]:tg.W.Ptr[1]]; len(got) != 1 || got[0] != 1 {
		t.Fatalf("W[0] = %v, want the co-occurring entity 1 only", got)
	}
	if err := tg.BuildNeighbours(context.Background(), cpu.New(), vecs[:4], 2, o); err == nil {
		t.Fatal("short vectors accepted")
	}
	o.Kappa = 0
	if err := tg.BuildNeighbours(context.Background(), cpu.New(), vecs, 2, o); err == nil {
		t.Fatal("κ = 0 accepted")
	}
}

// chain is e0 –s0– e1 –s1– e2 –s2– e3 –s3– e4.
var chain = [][]int32{{0, 1}, {1, 2}, {2, 3}, {3, 4}}

func activation(p *Propagation, e int32) (Activation, bool) {
	for _, a := range p.Active {
		if a.Entity == e {
			return a, true
		}
	}
	return Activation{}, false
}

// TestPropagationMaxIterOffByOne: maxT = 3 runs two rounds, so a chain is
// walked two sentences deep (LinearRAG: plain products, cumulative ew,
// last-write activations).
func TestPropagationMaxIterOffByOne(t *testing.T) {
	tg := tinyTriGraph(5, chain, nil)
	o := PropagationOptions{MaxIter: 3, Threshold: 0.1, Sentences: 1}
	p, err := tg.Propagate(context.Background(), []Seed{{0, 1}}, constSim(0.9), o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Rounds != 2 {
		t.Fatalf("rounds = %d, want 2", p.Rounds)
	}
	wantEW := []float64{1.9, 0.9 + 0.81, 0.81, 0, 0}
	for e, w := range wantEW {
		if !near(p.Weights[e], w) {
			t.Fatalf("ew = %v, want %v", p.Weights, wantEW)
		}
	}
	for _, w := range []Activation{{0, 0.9, 2}, {1, 0.81, 3}, {2, 0.81, 3}} {
		if a, ok := activation(p, w.Entity); !ok || !near(a.Score, w.Score) || a.Tier != w.Tier {
			t.Fatalf("activation of %d = %+v, want %+v", w.Entity, a, w)
		}
	}
	if _, ok := activation(p, 3); ok {
		t.Fatal("entity 3 activated: a third round ran")
	}
	o.MaxIter = 1
	if p, _ := tg.Propagate(context.Background(), []Seed{{0, 1}}, constSim(0.9), o); p.Rounds != 0 || len(p.Active) != 1 {
		t.Fatalf("maxT 1: %d rounds, %d active; want 0 and the seed", p.Rounds, len(p.Active))
	}
}

// TestPropagationNexusClampAndFloor: through a sentence, a neighbour gets
// max(min(base, w), δ), anyone else δ (the spreading entity included);
// then one W hop adds entities not yet in the frontier.
func TestPropagationNexusClampAndFloor(t *testing.T) {
	tg := tinyTriGraph(5, chain, map[int32][][2]float64{0: {{1, 0.5}}, 1: {{4, 0.8}, {0, 0.9}}})
	o := PropagationOptions{MaxIter: 2, Threshold: 0.1, Sentences: 1, Neighbours: true}
	p, err := tg.Propagate(context.Background(), []Seed{{0, 1}}, constSim(0.9), o)
	if err != nil {
		t.Fatal(err)
	}
	// Round 1, path 1: e0 (1.0) through s0 (base .9): e0 is not its own
	// neighbour → δ = .1; e1 is, w = .5 → .5. Path 2: e0 .1·.5 < δ;
	// e1 .5·.8 = .4 → e4 (tier 2); e0 is in the frontier already.
	want := map[int32]Activation{0: {0, 0.1, 2}, 1: {1, 0.5, 2}, 4: {4, 0.4, 2}}
	wantEW := []float64{1.1, 0.5, 0, 0, 0.4}
	for e, w := range wantEW {
		if !near(p.Weights[e], w) {
			t.Fatalf("ew = %v, want %v", p.Weights, wantEW)
		}
	}
	for e, w := range want {
		if a, ok := activation(p, e); !ok || !near(a.Score, w.Score) || a.Tier != w.Tier {
			t.Fatalf("activation of %d = %+v, want %+v", e, a, w)
		}
	}
	// LinearRAG on the same graph: no clamp, no W hop.
	o.Neighbours = false
	p, _ = tg.Propagate(context.Background(), []Seed{{0, 1}}, constSim(0.9), o)
	if !near(p.Weights[1], 0.9) || p.Weights[4] != 0 {
		t.Fatalf("linearrag ew = %v, want e1 0.9 and e4 0", p.Weights)
	}
}

// TestPropagationThresholds: a seed below δ does not spread; a product
// below δ is dropped.
func TestPropagationThresholds(t *testing.T) {
	tg := tinyTriGraph(5, chain, nil)
	o := PropagationOptions{MaxIter: 3, Threshold: 0.5, Sentences: 1}
	p, _ := tg.Propagate(context.Background(), []Seed{{0, 0.4}}, constSim(1), o)
	if len(p.Active) != 1 || p.Weights[1] != 0 {
		t.Fatalf("a seed below δ spread: %+v", p.Active)
	}
	p, _ = tg.Propagate(context.Background(), []Seed{{0, 0.8}}, constSim(0.6), o) // .8·.6 = .48 < .5
	if len(p.Active) != 1 || p.Weights[1] != 0 {
		t.Fatalf("a product below δ was kept: %+v", p.Active)
	}
}

// TestPropagationEtaAndUsed: an entity spreads through its η most similar
// unused sentences, and a sentence used by one entity is not used again
// (by another entity of the same round either).
func TestPropagationEtaAndUsed(t *testing.T) {
	// e0 is in s0 {0,1}, s1 {0,2}, s2 {0,3}; e4 is in s1 too.
	tg := tinyTriGraph(5, [][]int32{{0, 1}, {0, 2, 4}, {0, 3}}, nil)
	sims := []float32{0.7, 0.9, 0.8}
	sim := func(s int32) float32 { return sims[s] }
	o := PropagationOptions{MaxIter: 2, Threshold: 0.1, Sentences: 2}
	p, _ := tg.Propagate(context.Background(), []Seed{{0, 1}, {4, 1}}, sim, o)
	// e0 takes s1 (.9) and s2 (.8); e4's only sentence s1 is used → nothing.
	if p.Weights[1] != 0 || !near(p.Weights[2], 0.9) || !near(p.Weights[3], 0.8) {
		t.Fatalf("ew = %v: want s1 and s2 only (e1 0, e2 .9, e3 .8)", p.Weights)
	}
	if !near(p.Weights[4], 1+0.9) {
		t.Fatalf("ew[4] = %v, want the seed 1 + .9 through e0's use of s1", p.Weights[4])
	}
}

// TestPassageBonus: Σ s·ln(1+c)/max(tier, 1) over the active entities
// that occur in the passage.
func TestPassageBonus(t *testing.T) {
	tg := &TriGraph{Passages: 3, Entities: make([]string, 2)}
	tg.Occur = CSR{Ptr: []int64{0, 2, 3}, Idx: []int32{0, 2, 2}, W: []float32{1, 3, 2}}
	bonus := make([]float64, 3)
	tg.PassageBonus([]Activation{{0, 0.8, 1}, {1, 0.5, 2}}, bonus)
	want := []float64{0.8 * math.Log(2), 0, 0.8*math.Log(4) + 0.5*math.Log(3)/2}
	for p := range want {
		if !near(bonus[p], want[p]) {
			t.Fatalf("bonus = %v, want %v", bonus, want)
		}
	}
}

// TestPageRankGraphWeights: passage–entity weights are counts over the
// passage's total; adjacent passages are joined with weight 1.
func TestPageRankGraphWeights(t *testing.T) {
	tg := &TriGraph{Passages: 2, Entities: make([]string, 2)}
	tg.PassEnts = CSR{Ptr: []int64{0, 2, 3}, Idx: []int32{0, 1, 1}, W: []float32{3, 1, 2}}
	a, err := tg.PageRankGraph(true)
	if err != nil {
		t.Fatal(err)
	}
	// Passage 0: entity 0 (vertex 2) 3/4, entity 1 (vertex 3) 1/4, passage 1.
	want := map[[2]int32]float64{{0, 2}: 0.75, {0, 3}: 0.25, {0, 1}: 1, {1, 3}: 1}
	for v := 0; v < a.N(); v++ {
		for q := a.Ptr[v]; q < a.Ptr[v+1]; q++ {
			u := a.Idx[q]
			key := [2]int32{min(int32(v), u), max(int32(v), u)}
			if w, ok := want[key]; !ok || !near(a.Weight(q), w) {
				t.Fatalf("edge %d–%d weight %v, want %v (present %v)", v, u, a.Weight(q), w, ok)
			}
		}
	}
	if b, _ := tg.PageRankGraph(false); b.Strength[1] != 1 {
		t.Fatalf("without adjacent edges passage 1's strength = %v, want 1", b.Strength[1])
	}
}

// NeighbourRows, the rows a filtered view asks for one block at a time,
// equal BuildNeighbours' on random Tri-Graphs.
func TestNeighbourRowEqualsBuild(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	filled := 0
	for trial := range 20 {
		ne, dims := 5+rng.IntN(40), 1+rng.IntN(4)
		if trial < 2 {
			ne = 2*NeighbourBlock + 40 // three blocks, the last one short
		}
		var sents [][]int32
		for range 3 + rng.IntN(60) {
			var s []int32
			for range 1 + rng.IntN(4) {
				s = append(s, int32(rng.IntN(ne)))
			}
			sents = append(sents, s)
		}
		tg := tinyTriGraph(ne, sents, nil)
		vecs := make([]float32, ne*dims)
		for i := range vecs {
			vecs[i] = float32(rng.IntN(5) - 2) // small integers: exact dot products, many ties
		}
		o := NeighbourOptions{CoShare: []float64{0.1, 1}[trial%2], CoCap: 200, SimTopK: rng.IntN(6), Kappa: 1 + rng.IntN(5), Alpha: 0.5, Threshold: 0.3}
		if err := tg.BuildNeighbours(context.Background(), cpu.New(), vecs, dims, o); err != nil {
			t.Fatal(err)
		}
		for e := range ne {
			b, i := e/NeighbourBlock, e%NeighbourBlock
			rows, err := tg.NeighbourRows(context.Background(), cpu.New(), vecs, dims, b, o)
			if err != nil {
				t.Fatal(err)
			}
			idx, w := rows.Idx[rows.Ptr[i]:rows.Ptr[i+1]], rows.W[rows.Ptr[i]:rows.Ptr[i+1]]
			lo, hi := tg.W.Ptr[e], tg.W.Ptr[e+1]
			if !slices.Equal(idx, tg.W.Idx[lo:hi]) || !slices.Equal(w, tg.W.W[lo:hi]) {
				t.Fatalf("trial %d, entity %d: row %v %v, built %v %v", trial, e, idx, w, tg.W.Idx[lo:hi], tg.W.W[lo:hi])
			}
			filled += min(len(idx), 1)
		}
	}
	if filled < 100 {
		t.Fatalf("only %d non-empty rows compared", filled)
	}
}

// TestNeighbourMatrixOnHNSW: from ANNFrom entities the cosine neighbours
// come from an HNSW graph over the nonzero vectors; at an ef as large as
// the graph W is the exact build's (integer vectors: exact dot products,
// many ties, copies, zero vectors left out), and a tiny ef changes it (the
// walk ran).
func TestNeighbourMatrixOnHNSW(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 5))
	const ne, dims = 1200, 48
	var sents [][]int32
	for range 900 {
		sents = append(sents, []int32{int32(rng.IntN(ne)), int32(rng.IntN(ne)), int32(rng.IntN(ne))})
	}
	vecs := make([]float32, ne*dims) // 8 entries ±1 each: one norm, so a copy is an entity's best
	for e := range ne {
		for _, j := range rng.Perm(dims)[:8] {
			vecs[e*dims+j] = float32(2*rng.IntN(2) - 1)
		}
	}
	for e := 5; e < ne; e += 13 { // copies of other entities' vectors, some of copies
		copy(vecs[e*dims:(e+1)*dims], vecs[(e-1-e%3)*dims:])
	}
	for e := 0; e < ne; e += 37 { // some zero vectors
		clear(vecs[e*dims : (e+1)*dims])
	}
	build := func(annFrom, ef int) CSR {
		tg := tinyTriGraph(ne, sents, nil)
		o := DefaultNeighbourOptions()
		o.ANNFrom, o.Ef = annFrom, ef
		if err := tg.BuildNeighbours(context.Background(), cpu.New(), vecs, dims, o); err != nil {
			t.Fatal(err)
		}
		return tg.W
	}
	same := func(a, b CSR) bool {
		return slices.Equal(a.Ptr, b.Ptr) && slices.Equal(a.Idx, b.Idx) && slices.Equal(a.W, b.W)
	}
	exact := build(0, 1)
	if !same(exact, build(ne+1, 128)) {
		t.Fatal("below ANNFrom entities W is not the exact build's")
	}
	if !same(exact, build(ne, ne)) {
		t.Fatal("W on the HNSW graph at ef ≥ N is not the exact build's")
	}
	if same(exact, build(ne, 1)) {
		t.Fatal("W on the HNSW graph at ef 1 is the exact build's: the walk did not run")
	}
	o := DefaultNeighbourOptions()
	o.Ef = 0
	if err := o.Validate(); err == nil {
		t.Fatal("ef 0 with an HNSW threshold was accepted")
	}
}
