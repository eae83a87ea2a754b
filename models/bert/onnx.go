package bert

import (
	"fmt"
	"io"
	"math"

	"github.com/advancedclimatesystems/gonnx/onnx"

	"github.com/gleaner-rag/gleaner/models/onnxgraph"
	"github.com/gleaner-rag/gleaner/models/safetensors"
)

// WriteONNX writes the model as an ONNX graph (opset 17) with the same
// weights: inputs input_ids, attention_mask and token_type_ids
// ([batch, seq] int64); outputs last_hidden_state ([batch, seq, hidden])
// and, for a cross-encoder, logits ([batch, 1]). This is how gleaner makes
// test models for ONNX Runtime; the graph follows HuggingFace's
// (post-LayerNorm layers, exact-erf GELU, additive −10000 padding mask,
// RoBERTa position ids from the mask for XLM-R).
func WriteONNX(w io.Writer, cfg Config, t map[string]safetensors.Tensor) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	g := &graph{Graph: onnxgraph.New("gleaner-" + cfg.ModelType), t: t}
	x, bias := g.embeddings(cfg)
	for i := 0; i < cfg.Layers; i++ {
		x = g.layer(cfg, fmt.Sprintf("%sencoder.layer.%d.", cfg.prefix(), i), x, bias)
	}
	g.Output(x, "last_hidden_state", onnx.TensorProto_FLOAT, "batch", "seq", cfg.Hidden)
	if g.hasHead(cfg) {
		g.head(cfg, x)
	}
	for _, in := range []string{"input_ids", "attention_mask", "token_type_ids"} {
		g.Input(in, onnx.TensorProto_INT64, "batch", "seq")
	}
	if g.err != nil {
		return g.err
	}
	return g.Write(w)
}

type graph struct {
	*onnxgraph.Graph
	t   map[string]safetensors.Tensor
	err error
}

// weight adds a tensor as an initializer under its own name.
func (g *graph) weight(name string) string {
	t, ok := g.t[name]
	if !ok {
		if g.err == nil {
			g.err = fmt.Errorf("bert: onnx: weight %q is missing", name)
		}
		return name
	}
	dims := make([]int64, len(t.Shape))
	for i, d := range t.Shape {
		dims[i] = int64(d)
	}
	return g.ConstF(name, dims, t.Data)
}

// linear is x · Wᵀ + b, with Wᵀ (in × out) stored transposed from
// HuggingFace's out × in.
func (g *graph) linear(x, name string) string {
	t, ok := g.t[name+".weight"]
	if !ok {
		g.err = fmt.Errorf("bert: onnx: weight %q is missing", name+".weight")
		return x
	}
	out, in := t.Shape[0], t.Shape[1]
	w := g.ConstF(name+".weight_t", []int64{int64(in), int64(out)}, onnxgraph.Transposed(t.Data, out, in))
	return g.Op("Add", []string{g.Op("MatMul", []string{x, w}), g.weight(name + ".bias")})
}

func (g *graph) layerNorm(x, name string, eps float64) string {
	return g.Op("LayerNormalization", []string{x, g.weight(name + ".weight"), g.weight(name + ".bias")},
		onnxgraph.AttrI("axis", -1), onnxgraph.AttrF("epsilon", float32(eps)))
}

// embeddings returns the normalised embeddings and the additive attention
// mask bias ([batch, 1, 1, seq]).
func (g *graph) embeddings(c Config) (string, string) {
	pre := c.prefix()
	word := g.Op("Gather", []string{g.weight(pre + "embeddings.word_embeddings.weight"), "input_ids"})
	typ := g.Op("Gather", []string{g.weight(pre + "embeddings.token_type_embeddings.weight"), "token_type_ids"})
	var pos string
	if c.ModelType == "xlm-roberta" { // RoBERTa: cumsum(mask)·mask + padding_idx
		cs := g.Op("CumSum", []string{"attention_mask", g.ConstI("axis1", nil, 1)})
		ids := g.Op("Add", []string{g.Op("Mul", []string{cs, "attention_mask"}), g.ConstI("pad_idx", nil, int64(c.PadTokenID))})
		pos = g.Op("Gather", []string{g.weight(pre + "embeddings.position_embeddings.weight"), ids})
	} else {
		seq := g.Op("Gather", []string{g.Op("Shape", []string{"input_ids"}), g.ConstI("one", nil, 1)})
		rng := g.Op("Range", []string{g.ConstI("zero", nil, 0), seq, g.ConstI("step", nil, 1)})
		pos = g.Op("Gather", []string{g.weight(pre + "embeddings.position_embeddings.weight"), rng})
	}
	x := g.Op("Add", []string{g.Op("Add", []string{word, typ}), pos})
	x = g.layerNorm(x, pre+"embeddings.LayerNorm", c.LayerNormEps)
	m := g.Op("Cast", []string{"attention_mask"}, onnxgraph.AttrI("to", int64(onnx.TensorProto_FLOAT)))
	m = g.Op("Unsqueeze", []string{m, g.ConstI("axes12", []int64{2}, 1, 2)})
	bias := g.Op("Mul", []string{g.Op("Sub", []string{g.ConstF("onef", nil, []float32{1}), m}), g.ConstF("neg", nil, []float32{-10000})})
	return x, bias
}

func (g *graph) layer(c Config, l, x, bias string) string {
	hd := c.Hidden / c.Heads
	split := g.ConstI(l+"split", []int64{4}, 0, 0, int64(c.Heads), int64(hd))
	heads := func(y string, perm ...int64) string {
		return g.Op("Transpose", []string{g.Op("Reshape", []string{y, split})}, onnxgraph.AttrInts("perm", perm...))
	}
	q := heads(g.linear(x, l+"attention.self.query"), 0, 2, 1, 3)
	k := heads(g.linear(x, l+"attention.self.key"), 0, 2, 3, 1)
	v := heads(g.linear(x, l+"attention.self.value"), 0, 2, 1, 3)
	s := g.Op("Mul", []string{g.Op("MatMul", []string{q, k}), g.ConstF(l+"scale", nil, []float32{float32(1 / math.Sqrt(float64(hd)))})})
	p := g.Op("Softmax", []string{g.Op("Add", []string{s, bias})}, onnxgraph.AttrI("axis", -1))
	ctx := g.Op("Transpose", []string{g.Op("MatMul", []string{p, v})}, onnxgraph.AttrInts("perm", 0, 2, 1, 3))
	ctx = g.Op("Reshape", []string{ctx, g.ConstI(l+"merge", []int64{3}, 0, 0, int64(c.Hidden))})
	x = g.layerNorm(g.Op("Add", []string{g.linear(ctx, l+"attention.output.dense"), x}), l+"attention.output.LayerNorm", c.LayerNormEps)
	f := g.linear(x, l+"intermediate.dense")
	erf := g.Op("Erf", []string{g.Op("Mul", []string{f, g.ConstF(l+"rsqrt2", nil, []float32{float32(1 / math.Sqrt2)})})})
	f = g.Op("Mul", []string{g.Op("Mul", []string{f, g.ConstF(l+"half", nil, []float32{0.5})}), g.Op("Add", []string{erf, g.ConstF(l+"onee", nil, []float32{1})})})
	return g.layerNorm(g.Op("Add", []string{g.linear(f, l+"output.dense"), x}), l+"output.LayerNorm", c.LayerNormEps)
}

func (g *graph) hasHead(c Config) bool {
	if c.ModelType == "bert" {
		_, ok := g.t["classifier.weight"]
		return ok
	}
	_, ok := g.t["classifier.out_proj.weight"]
	return ok
}

// head adds logits = out(tanh(dense(first token))).
func (g *graph) head(c Config, x string) {
	first := g.Op("Gather", []string{x, g.ConstI("tok0", nil, 0)}, onnxgraph.AttrI("axis", 1))
	dense, out := "classifier.dense", "classifier.out_proj"
	if c.ModelType == "bert" {
		dense, out = "bert.pooler.dense", "classifier"
	}
	logits := g.linear(g.Op("Tanh", []string{g.linear(first, dense)}), out)
	g.Output(logits, "logits", onnx.TensorProto_FLOAT, "batch", 1)
}
