package llama

import (
	"fmt"
	"io"
	"math"

	"github.com/advancedclimatesystems/gonnx/onnx"

	"github.com/gleaner-rag/gleaner/models/onnxgraph"
	"github.com/gleaner-rag/gleaner/models/safetensors"
)

// WriteONNX writes the decoder as an ONNX graph (opset 17) with the same
// weights, written the way HuggingFace's LlamaForCausalLM computes (no
// cache): input input_ids ([1, seq] int64), output logits ([1, seq,
// vocab]). RMSNorm is composed from ReduceMean and Sqrt, RoPE from cos/sin
// tables gathered by position with rotate_half, grouped-query heads by
// gathering each query head's key/value head, the causal mask sliced from a
// table. This is how gleaner makes decoders for ONNX Runtime parity tests:
// the graph takes sequences of up to min(max_position_embeddings,
// ONNXMaxSeq) tokens, which bounds its tables.
func WriteONNX(w io.Writer, cfg Config, t map[string]safetensors.Tensor) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	b := &onnxBuilder{g: onnxgraph.New("gleaner-llama"), t: t, c: cfg}
	b.tables()
	x := b.g.Op("Gather", []string{b.weight("model.embed_tokens.weight"), "input_ids"})
	for i := 0; i < cfg.Layers; i++ {
		x = b.layer(fmt.Sprintf("model.layers.%d.", i), x)
	}
	x = b.rmsNorm(x, "model.norm.weight")
	head := "lm_head.weight"
	if cfg.TieWordEmbeddings {
		head = "model.embed_tokens.weight"
	}
	logits := b.linear(x, head, cfg.VocabSize, cfg.Hidden)
	b.g.Output(logits, "logits", onnx.TensorProto_FLOAT, 1, "seq", cfg.VocabSize)
	b.g.Input("input_ids", onnx.TensorProto_INT64, 1, "seq")
	if b.err != nil {
		return b.err
	}
	return b.g.Write(w)
}

// ONNXMaxSeq bounds the sequences a written ONNX graph takes (its causal
// mask table is ONNXMaxSeq² floats).
const ONNXMaxSeq = 512

type onnxBuilder struct {
	g             *onnxgraph.Graph
	t             map[string]safetensors.Tensor
	c             Config
	cos, sin, msk string // [seq, head_dim] tables and the [seq, seq] mask
	err           error
	added         map[string]bool
}

func (b *onnxBuilder) weight(name string) string {
	if b.added == nil {
		b.added = map[string]bool{}
	}
	t, ok := b.t[name]
	if !ok {
		if b.err == nil {
			b.err = fmt.Errorf("llama: onnx: tensor %q is missing", name)
		}
		return name
	}
	if !b.added[name] {
		dims := make([]int64, len(t.Shape))
		for i, d := range t.Shape {
			dims[i] = int64(d)
		}
		b.g.ConstF(name, dims, t.Data)
		b.added[name] = true
	}
	return name
}

// linear is x · Wᵀ for a HuggingFace out × in weight.
func (b *onnxBuilder) linear(x, name string, out, in int) string {
	t, ok := b.t[name]
	if !ok {
		b.err = fmt.Errorf("llama: onnx: tensor %q is missing", name)
		return x
	}
	w := b.g.ConstF(name+".T", []int64{int64(in), int64(out)}, onnxgraph.Transposed(t.Data, out, in))
	return b.g.Op("MatMul", []string{x, w})
}

func (b *onnxBuilder) rmsNorm(x, name string) string {
	g := b.g
	ms := g.Op("ReduceMean", []string{g.Op("Mul", []string{x, x})}, onnxgraph.AttrInts("axes", -1), onnxgraph.AttrI("keepdims", 1))
	eps := g.ConstF(name+".eps", nil, []float32{float32(b.c.RMSNormEps)})
	inv := g.Op("Reciprocal", []string{g.Op("Sqrt", []string{g.Op("Add", []string{ms, eps})})})
	return g.Op("Mul", []string{g.Op("Mul", []string{x, inv}), b.weight(name)})
}

// tables adds the cos/sin tables (HuggingFace's cat(freqs, freqs)) and the
// causal mask, each sliced to the input's length.
func (b *onnxBuilder) tables() {
	g, c := b.g, b.c
	p, d := min(c.MaxPositions, ONNXMaxSeq), c.HeadDim
	inv := c.InvFreq()
	cos, sin := make([]float32, p*d), make([]float32, p*d)
	for pos := 0; pos < p; pos++ {
		for i := 0; i < d; i++ {
			s, co := math.Sincos(float64(pos) * float64(inv[i%(d/2)]))
			cos[pos*d+i], sin[pos*d+i] = float32(co), float32(s)
		}
	}
	mask := make([]float32, p*p)
	for i := 0; i < p; i++ {
		for j := i + 1; j < p; j++ {
			mask[i*p+j] = float32(math.Inf(-1))
		}
	}
	seq := g.Op("Gather", []string{g.Op("Shape", []string{"input_ids"}), g.ConstI("dim1", []int64{1}, 1)}) // [seq]
	zero := g.ConstI("zero1", []int64{1}, 0)
	rng := g.Op("Range", []string{g.ConstI("zero", nil, 0), g.Op("Squeeze", []string{seq, zero}), g.ConstI("one", nil, 1)})
	b.cos = g.Op("Gather", []string{g.ConstF("rope.cos", []int64{int64(p), int64(d)}, cos), rng})
	b.sin = g.Op("Gather", []string{g.ConstF("rope.sin", []int64{int64(p), int64(d)}, sin), rng})
	ends := g.Op("Concat", []string{seq, seq}, onnxgraph.AttrI("axis", 0))
	b.msk = g.Op("Slice", []string{g.ConstF("causal", []int64{int64(p), int64(p)}, mask), g.ConstI("starts", []int64{2}, 0, 0), ends})
}

// heads reshapes [1, seq, n·d] to [1, n, seq, d].
func (b *onnxBuilder) heads(x string, n int, tag string) string {
	g := b.g
	shape := g.ConstI(tag+".shape", []int64{4}, 1, -1, int64(n), int64(b.c.HeadDim))
	return g.Op("Transpose", []string{g.Op("Reshape", []string{x, shape})}, onnxgraph.AttrInts("perm", 0, 2, 1, 3))
}

// rope is x·cos + rotate_half(x)·sin over [1, n, seq, d].
func (b *onnxBuilder) rope(x, tag string) string {
	g, d := b.g, int64(b.c.HeadDim)
	axis := g.ConstI(tag+".axis", []int64{1}, 3)
	x1 := g.Op("Slice", []string{x, g.ConstI(tag+".s0", []int64{1}, 0), g.ConstI(tag+".e0", []int64{1}, d/2), axis})
	x2 := g.Op("Slice", []string{x, g.ConstI(tag+".s1", []int64{1}, d/2), g.ConstI(tag+".e1", []int64{1}, d), axis})
	rot := g.Op("Concat", []string{g.Op("Neg", []string{x2}), x1}, onnxgraph.AttrI("axis", 3))
	return g.Op("Add", []string{g.Op("Mul", []string{x, b.cos}), g.Op("Mul", []string{rot, b.sin})})
}

func (b *onnxBuilder) layer(p, x string) string {
	g, c := b.g, b.c
	h, d := c.Hidden, c.HeadDim
	hn := b.rmsNorm(x, p+"input_layernorm.weight")
	q := b.rope(b.heads(b.linear(hn, p+"self_attn.q_proj.weight", c.QDim(), h), c.Heads, p+"q"), p+"q")
	k := b.rope(b.heads(b.linear(hn, p+"self_attn.k_proj.weight", c.KVDim(), h), c.KVHeads, p+"k"), p+"k")
	v := b.heads(b.linear(hn, p+"self_attn.v_proj.weight", c.KVDim(), h), c.KVHeads, p+"v")
	group := make([]int64, c.Heads) // query head → its key/value head
	for i := range group {
		group[i] = int64(i / (c.Heads / c.KVHeads))
	}
	idx := g.ConstI(p+"kvgroup", []int64{int64(c.Heads)}, group...)
	k = g.Op("Gather", []string{k, idx}, onnxgraph.AttrI("axis", 1))
	v = g.Op("Gather", []string{v, idx}, onnxgraph.AttrI("axis", 1))
	kt := g.Op("Transpose", []string{k}, onnxgraph.AttrInts("perm", 0, 1, 3, 2))
	s := g.Op("Mul", []string{g.Op("MatMul", []string{q, kt}), g.ConstF(p+"scale", nil, []float32{float32(1 / math.Sqrt(float64(d)))})})
	a := g.Op("Softmax", []string{g.Op("Add", []string{s, b.msk})}, onnxgraph.AttrI("axis", -1))
	ctx := g.Op("Transpose", []string{g.Op("MatMul", []string{a, v})}, onnxgraph.AttrInts("perm", 0, 2, 1, 3))
	ctx = g.Op("Reshape", []string{ctx, g.ConstI(p+"merge", []int64{3}, 1, -1, int64(c.QDim()))})
	x = g.Op("Add", []string{x, b.linear(ctx, p+"self_attn.o_proj.weight", h, c.QDim())})
	hn = b.rmsNorm(x, p+"post_attention_layernorm.weight")
	gate := b.linear(hn, p+"mlp.gate_proj.weight", c.Intermediate, h)
	up := b.linear(hn, p+"mlp.up_proj.weight", c.Intermediate, h)
	act := g.Op("Mul", []string{g.Op("Mul", []string{gate, g.Op("Sigmoid", []string{gate})}), up})
	return g.Op("Add", []string{x, b.linear(act, p+"mlp.down_proj.weight", h, c.Intermediate)})
}
