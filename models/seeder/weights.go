package seeder

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Float is the network's element type: float32 to run, float64 to check.
type Float interface{ ~float32 | ~float64 }

// layerWeights are one Exphormer layer's: attention projections (no
// biases, as Exphormer), the edge-feature projection, two LayerNorms and
// the FFN (d → 2d → d), and the optional local block's projections and
// LayerNorm.
type layerWeights[F Float] struct {
	Q, K, V, E     []F
	LN1G, LN1B     []F
	W1, B1, W2, B2 []F
	LN2G, LN2B     []F
	M, EM          []F // local messages: node and edge projections
	LN3G, LN3B     []F
}

// Weights are every trainable tensor; gradients share the type.
type Weights[F Float] struct {
	InW, InB     []F // node input [z_v; cos(q,v); z_q; linked] → d
	HopEmb       []F // (MaxHop+1) × d
	GateW, GateB []F // [h; hop] → d gate
	VNW, VNB     []F // z_q → virtual node state
	VNIn, VNOut  []F // edge features node→VN and VN→node
	RelW, RelB   []F // relation input [z_r; cos(q,r); z_q; inverse] → d
	ExpT         []F // the expander edges' shared feature
	WordEmb      []F // Words × d: the question's bag of words
	RelEmb       []F // 2·Relations × d: per relation id and direction
	Layers       []layerWeights[F]
	PolW1, PolB1 []F // policy head d → d → 1
	PolW2, PolB2 []F
	ScW1, ScB1   []F // scoring head d → d → 1
	ScW2, ScB2   []F
	// PathSkip adds the text side's hop-weighted mass y straight to the
	// policy logits and scores (β_P·y, β_S·y; with Config.Paths): the
	// encoder refines the text side's ranking rather than relearn it.
	PathSkip []F
}

// nodeIn and relIn are the widths of the node and relation input rows.
func (c Config) nodeIn() int { return 2*c.In + 2 + c.nodePaths() }
func (c Config) relIn() int  { return 2*c.In + 2 + c.Paths }

// nodePaths is the path-mass values per node: one per hop and their sum.
func (c Config) nodePaths() int {
	if c.Paths == 0 {
		return 0
	}
	return c.Paths + 1
}

// each visits every tensor with its name and shape, in a fixed order
// (initialisation, saving and the optimiser depend on it). Optional parts
// a config turns off are skipped.
func (w *Weights[F]) each(c Config, fn func(name string, shape []int, p *[]F)) {
	d, in := c.Hidden, c.In
	fn("input.weight", []int{c.nodeIn(), d}, &w.InW)
	fn("input.bias", []int{d}, &w.InB)
	if c.HopGate {
		fn("hop.embedding", []int{c.MaxHop + 1, d}, &w.HopEmb)
		fn("hop.gate.weight", []int{2 * d, d}, &w.GateW)
		fn("hop.gate.bias", []int{d}, &w.GateB)
	}
	if c.Virtual {
		fn("virtual.weight", []int{in, d}, &w.VNW)
		fn("virtual.bias", []int{d}, &w.VNB)
		fn("virtual.edge_in", []int{d}, &w.VNIn)
		fn("virtual.edge_out", []int{d}, &w.VNOut)
	}
	fn("relation.weight", []int{c.relIn(), d}, &w.RelW)
	fn("relation.bias", []int{d}, &w.RelB)
	if c.Cycles > 0 {
		fn("expander.edge", []int{d}, &w.ExpT)
	}
	if c.Words > 0 {
		fn("words.embedding", []int{c.Words, d}, &w.WordEmb)
	}
	if c.Relations > 0 {
		fn("relation.embedding", []int{2 * c.Relations, d}, &w.RelEmb)
	}
	if len(w.Layers) != c.Layers {
		w.Layers = make([]layerWeights[F], c.Layers)
	}
	for l := range w.Layers {
		lw, p := &w.Layers[l], fmt.Sprintf("layers.%d.", l)
		fn(p+"attn.q", []int{d, d}, &lw.Q)
		fn(p+"attn.k", []int{d, d}, &lw.K)
		fn(p+"attn.v", []int{d, d}, &lw.V)
		fn(p+"attn.e", []int{d, d}, &lw.E)
		fn(p+"norm1.weight", []int{d}, &lw.LN1G)
		fn(p+"norm1.bias", []int{d}, &lw.LN1B)
		fn(p+"ffn.0.weight", []int{d, 2 * d}, &lw.W1)
		fn(p+"ffn.0.bias", []int{2 * d}, &lw.B1)
		fn(p+"ffn.1.weight", []int{2 * d, d}, &lw.W2)
		fn(p+"ffn.1.bias", []int{d}, &lw.B2)
		fn(p+"norm2.weight", []int{d}, &lw.LN2G)
		fn(p+"norm2.bias", []int{d}, &lw.LN2B)
		if c.Local {
			fn(p+"local.message", []int{d, d}, &lw.M)
			fn(p+"local.edge", []int{d, d}, &lw.EM)
			fn(p+"norm3.weight", []int{d}, &lw.LN3G)
			fn(p+"norm3.bias", []int{d}, &lw.LN3B)
		}
	}
	fn("policy.0.weight", []int{d, d}, &w.PolW1)
	fn("policy.0.bias", []int{d}, &w.PolB1)
	fn("policy.1.weight", []int{d}, &w.PolW2)
	fn("policy.1.bias", []int{1}, &w.PolB2)
	fn("score.0.weight", []int{d, d}, &w.ScW1)
	fn("score.0.bias", []int{d}, &w.ScB1)
	fn("score.1.weight", []int{d}, &w.ScW2)
	fn("score.1.bias", []int{1}, &w.ScB2)
	if c.Paths > 0 {
		fn("head.path_skip", []int{2}, &w.PathSkip)
	}
}

func numel(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// zeros allocates every tensor of c, zeroed (a gradient accumulator).
func zeros[F Float](c Config) *Weights[F] {
	w := &Weights[F]{}
	w.each(c, func(_ string, shape []int, p *[]F) { *p = make([]F, numel(shape)) })
	return w
}

// pathSkipInit is β's start: mass 1 against 0 is 10 logits, so the
// listwise loss starts low wherever the text side is right and the heads
// learn from the questions it gets wrong.
const pathSkipInit = 10

// NewWeights initialises c's tensors from c.Seed: Glorot-uniform matrices,
// zero biases, unit LayerNorm gains, small embeddings.
func NewWeights[F Float](c Config) (*Weights[F], error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x5eede7))
	w := zeros[F](c)
	w.each(c, func(name string, shape []int, p *[]F) {
		switch {
		case len(shape) == 2:
			lim := math.Sqrt(6 / float64(shape[0]+shape[1]))
			for i := range *p {
				(*p)[i] = F((2*rng.Float64() - 1) * lim)
			}
		case hasSuffix(name, "norm1.weight", "norm2.weight", "norm3.weight"):
			for i := range *p {
				(*p)[i] = 1
			}
		case hasSuffix(name, "words.embedding", "relation.embedding"):
			// unit scale, as the O(1) PCA inputs they sit beside
			for i := range *p {
				(*p)[i] = F(rng.NormFloat64())
			}
		case name == "head.path_skip":
			for i := range *p {
				(*p)[i] = pathSkipInit
			}
		case c.Paths > 0 && hasSuffix(name, "policy.1.weight", "score.1.weight"):
			// zero: the heads start as the text side's ranking (β·y) and learn
			// corrections, a residual branch's usual start
		case hasSuffix(name, "edge", "edge_in", "edge_out", "policy.1.weight", "score.1.weight"):
			lim := math.Sqrt(3 / float64(shape[0]))
			for i := range *p {
				(*p)[i] = F((2*rng.Float64() - 1) * lim)
			}
		}
	})
	return w, nil
}

func hasSuffix(s string, suffixes ...string) bool {
	for _, x := range suffixes {
		if len(s) >= len(x) && s[len(s)-len(x):] == x {
			return true
		}
	}
	return false
}
