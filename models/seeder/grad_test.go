package seeder

import (
	"math"
	"math/rand/v2"
	"testing"
)

// testConfig is a tiny model with every optional part on.
func testConfig() Config {
	return Config{In: 3, Hidden: 4, Heads: 2, Layers: 2, MaxHop: 2, Cycles: 2, Virtual: true, HopGate: true, Local: true, Words: 6, Relations: 3, Seed: 3}
}

// randomGraph is a graph of n nodes with random inputs and edges.
func randomGraph(c Config, n, edges, rels int, rng *rand.Rand) *Graph {
	g := &Graph{Query: randVec(c.In, rng)}
	for i := 0; i < n; i++ {
		g.IDs = append(g.IDs, int32(100+i*7%n))
		g.NodeIn = append(g.NodeIn, randVec(c.In, rng)...)
		g.NodeCos = append(g.NodeCos, float32(rng.Float64()*2-1))
		g.Hops = append(g.Hops, rng.IntN(c.MaxHop+2)) // beyond MaxHop clamps
		g.Eligible = append(g.Eligible, i > 0)
		g.Linked = append(g.Linked, i%5 == 0)
		for range c.nodePaths() {
			g.PathMass = append(g.PathMass, float32(rng.Float64()))
		}
	}
	for r := 0; r < rels; r++ {
		id := int32(-1)
		if c.Relations > 0 {
			id = int32(r / 2 % c.Relations)
		}
		var path []float32
		for range c.Paths {
			path = append(path, float32(rng.Float64()))
		}
		g.Rels = append(g.Rels, Relation{In: randVec(c.In, rng), Cos: float32(rng.Float64()), Inverse: r%2 == 1, ID: id, Path: path})
	}
	for range min(c.Words, 4) {
		g.Words = append(g.Words, int32(rng.IntN(c.Words))) // repeats count twice
	}
	for e := 0; e < edges; e++ {
		g.Edges = append(g.Edges, Edge{Src: int32(rng.IntN(n)), Dst: int32(rng.IntN(n)), Rel: int32(rng.IntN(rels))})
	}
	return g
}

func randVec(n int, rng *rand.Rand) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// linearLoss is Σ a·P + Σ b·S over the rows of a forward pass whose
// dropout masks come from a fixed seed.
func linearLoss(w *Weights[float64], c Config, b *batch[float64], a, bb []float64) (float64, *tape[float64]) {
	t := forward(w, c, b, 0.2, rand.New(rand.NewPCG(9, 9)))
	var l float64
	for i := range t.P {
		l += a[i]*t.P[i] + bb[i]*t.S[i]
	}
	return l, t
}

// TestBackwardMatchesFiniteDifferences checks every weight's gradient,
// through every hand-written backward (heads, FFN, LayerNorm, edge
// attention, edge-feature gather, gate, hop and virtual-node rows),
// against central differences in float64.
func TestBackwardMatchesFiniteDifferences(t *testing.T) {
	withPaths := testConfig()
	withPaths.Paths = 2
	for _, c := range []Config{testConfig(), {In: 2, Hidden: 6, Heads: 3, Layers: 1, MaxHop: 1, Seed: 5}, withPaths} {
		rng := rand.New(rand.NewPCG(1, 2))
		gs := []*Graph{randomGraph(c, 13, 30, 3, rng), randomGraph(c, 5, 6, 2, rng)}
		b, err := newBatch[float64](c, gs)
		if err != nil {
			t.Fatal(err)
		}
		w, err := NewWeights[float64](c)
		if err != nil {
			t.Fatal(err)
		}
		// non-trivial biases and norms, so no gradient is trivially 0
		w.each(c, func(_ string, _ []int, p *[]float64) {
			for i := range *p {
				(*p)[i] += 0.3 * rng.NormFloat64()
			}
		})
		a, bb := make([]float64, b.n), make([]float64, b.n)
		for i := range a {
			a[i], bb[i] = rng.NormFloat64(), rng.NormFloat64()
		}
		_, tp := linearLoss(w, c, b, a, bb)
		g := zeros[float64](c)
		tp.backward(w, g, a, bb)
		grads := map[string][]float64{}
		g.each(c, func(name string, _ []int, p *[]float64) { grads[name] = *p })
		checked := 0
		w.each(c, func(name string, _ []int, p *[]float64) {
			for i := range *p {
				const h = 1e-6
				x := (*p)[i]
				(*p)[i] = x + h
				up, _ := linearLoss(w, c, b, a, bb)
				(*p)[i] = x - h
				down, _ := linearLoss(w, c, b, a, bb)
				(*p)[i] = x
				fd := (up - down) / (2 * h)
				got := grads[name][i]
				// central differences are exact to O(h²) plus rounding ≈ ε·|L|/h
				if math.Abs(fd-got) > 1e-6*math.Max(1, math.Abs(fd)) {
					t.Errorf("config %+v: %s[%d]: backward %.9g, finite difference %.9g", c, name, i, got, fd)
				}
				checked++
			}
		})
		if checked == 0 {
			t.Fatal("no weights checked")
		}
	}
}

// TestEdgeAttentionKernelMatchesReference runs the float32 engine kernel
// and the float64 reference loop on the same batch.
func TestEdgeAttentionKernelMatchesReference(t *testing.T) {
	c := testConfig()
	c.Hidden, c.Heads = 8, 2
	rng := rand.New(rand.NewPCG(4, 4))
	gs := []*Graph{randomGraph(c, 20, 60, 4, rng)}
	b32, _ := newBatch[float32](c, gs)
	b64, _ := newBatch[float64](c, gs)
	d := c.Hidden
	q, k, v, e := randVec(b32.n*d, rng), randVec(b32.n*d, rng), randVec(b32.n*d, rng), randVec((b32.nRel+extraRows)*d, rng)
	got := edgeAttention(b32, c.Heads, d, q, k, v, e)
	want := edgeAttention(b64, c.Heads, d, widen(q), widen(k), widen(v), widen(e))
	for i := range want {
		// float32 accumulation over ≤ 64 edges of O(1) terms
		if math.Abs(float64(got[i])-want[i]) > 1e-4*math.Max(1, math.Abs(want[i])) {
			t.Fatalf("out[%d] = %g, reference %g", i, got[i], want[i])
		}
	}
}

// TestEdgeAttentionBackwardThroughClamp checks the backward where logits
// are large enough for the ±5 clamp to cut some gradients.
func TestEdgeAttentionBackwardThroughClamp(t *testing.T) {
	c := testConfig()
	rng := rand.New(rand.NewPCG(6, 6))
	gs := []*Graph{randomGraph(c, 12, 40, 2, rng)}
	b, _ := newBatch[float64](c, gs)
	d := c.Hidden
	q, k, v, e := widen(randVec(b.n*d, rng)), widen(randVec(b.n*d, rng)), widen(randVec(b.n*d, rng)), widen(randVec((b.nRel+extraRows)*d, rng))
	for i := range e {
		e[i] *= 6 // pushes many logits past ±5
	}
	dout := widen(randVec(b.n*d, rng))
	loss := func() float64 {
		out := edgeAttention(b, c.Heads, d, q, k, v, e)
		var l float64
		for i := range out {
			l += out[i] * dout[i]
		}
		return l
	}
	out := edgeAttention(b, c.Heads, d, q, k, v, e)
	dq, dk, dv, de := edgeAttentionBack(b, c.Heads, d, q, k, v, e, out, dout)
	for name, pair := range map[string][2][]float64{"q": {q, dq}, "k": {k, dk}, "v": {v, dv}, "e": {e, de}} {
		x, g := pair[0], pair[1]
		for i := range x {
			const h = 1e-6
			orig := x[i]
			x[i] = orig + h
			up := loss()
			x[i] = orig - h
			down := loss()
			x[i] = orig
			fd := (up - down) / (2 * h)
			if math.Abs(fd-g[i]) > 1e-5*math.Max(1, math.Abs(fd)) && !nearClamp(b, c, q, k, e, name, i) {
				t.Errorf("d%s[%d]: backward %.9g, finite difference %.9g", name, i, g[i], fd)
			}
		}
	}
}

// nearClamp says whether a perturbation of x[i] can move some logit it
// feeds across ±5 (where the function has a kink and differences lie).
func nearClamp(b *batch[float64], c Config, q, k, e []float64, name string, i int) bool {
	d, hd := c.Hidden, c.Hidden/c.Heads
	scale := 1 / math.Sqrt(float64(hd))
	for dst := 0; dst < b.n; dst++ {
		for p := b.ptr[dst]; p < b.ptr[dst+1]; p++ {
			src := int(b.src[p])
			for h := 0; h < c.Heads; h++ {
				lo := h * hd
				var l float64
				for j := lo; j < lo+hd; j++ {
					l += k[src*d+j] * q[dst*d+j] * e[int(b.erow[p])*d+j]
				}
				if math.Abs(math.Abs(l*scale)-edgeClamp) < 1e-4 {
					return true
				}
			}
		}
	}
	return false
}
