package bert

import (
	"fmt"
	"io"
	"math"

	"google.golang.org/protobuf/proto"

	"github.com/advancedclimatesystems/gonnx/onnx"
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
	g := &graph{g: &onnx.GraphProto{Name: "gleaner-" + cfg.ModelType}, t: t}
	x, bias := g.embeddings(cfg)
	for i := 0; i < cfg.Layers; i++ {
		x = g.layer(cfg, fmt.Sprintf("%sencoder.layer.%d.", cfg.prefix(), i), x, bias)
	}
	g.g.Node = append(g.g.Node, &onnx.NodeProto{OpType: "Identity", Input: []string{x}, Output: []string{"last_hidden_state"}})
	g.g.Output = append(g.g.Output, valueInfo("last_hidden_state", onnx.TensorProto_FLOAT, "batch", "seq", cfg.Hidden))
	if g.hasHead(cfg) {
		g.head(cfg, x)
	}
	for _, in := range []string{"input_ids", "attention_mask", "token_type_ids"} {
		g.g.Input = append(g.g.Input, valueInfo(in, onnx.TensorProto_INT64, "batch", "seq"))
	}
	if g.err != nil {
		return g.err
	}
	m := &onnx.ModelProto{IrVersion: 8, ProducerName: "gleaner", Graph: g.g,
		OpsetImport: []*onnx.OperatorSetIdProto{{Domain: "", Version: 17}}}
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

type graph struct {
	g   *onnx.GraphProto
	t   map[string]safetensors.Tensor
	n   int
	err error
}

func valueInfo(name string, elem onnx.TensorProto_DataType, dims ...any) *onnx.ValueInfoProto {
	shape := &onnx.TensorShapeProto{}
	for _, d := range dims {
		dim := &onnx.TensorShapeProto_Dimension{}
		switch v := d.(type) {
		case string:
			dim.Value = &onnx.TensorShapeProto_Dimension_DimParam{DimParam: v}
		case int:
			dim.Value = &onnx.TensorShapeProto_Dimension_DimValue{DimValue: int64(v)}
		}
		shape.Dim = append(shape.Dim, dim)
	}
	return &onnx.ValueInfoProto{Name: name, Type: &onnx.TypeProto{Value: &onnx.TypeProto_TensorType{
		TensorType: &onnx.TypeProto_Tensor{ElemType: int32(elem), Shape: shape}}}}
}

// op appends a node and returns its (first) output name.
func (g *graph) op(typ string, inputs []string, attrs ...*onnx.AttributeProto) string {
	g.n++
	out := fmt.Sprintf("%s_%d", typ, g.n)
	g.g.Node = append(g.g.Node, &onnx.NodeProto{OpType: typ, Name: out, Input: inputs, Output: []string{out}, Attribute: attrs})
	return out
}

func attrI(name string, v int64) *onnx.AttributeProto {
	return &onnx.AttributeProto{Name: name, Type: onnx.AttributeProto_INT, I: v}
}

func attrF(name string, v float32) *onnx.AttributeProto {
	return &onnx.AttributeProto{Name: name, Type: onnx.AttributeProto_FLOAT, F: v}
}

func attrInts(name string, v ...int64) *onnx.AttributeProto {
	return &onnx.AttributeProto{Name: name, Type: onnx.AttributeProto_INTS, Ints: v}
}

// constF and constI add initializers and return their names.
func (g *graph) constF(name string, dims []int64, data []float32) string {
	g.g.Initializer = append(g.g.Initializer, &onnx.TensorProto{Name: name, Dims: dims, DataType: int32(onnx.TensorProto_FLOAT), FloatData: data})
	return name
}

func (g *graph) constI(name string, dims []int64, data ...int64) string {
	g.g.Initializer = append(g.g.Initializer, &onnx.TensorProto{Name: name, Dims: dims, DataType: int32(onnx.TensorProto_INT64), Int64Data: data})
	return name
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
	return g.constF(name, dims, t.Data)
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
	wt := make([]float32, len(t.Data))
	for o := 0; o < out; o++ {
		for i := 0; i < in; i++ {
			wt[i*out+o] = t.Data[o*in+i]
		}
	}
	w := g.constF(name+".weight_t", []int64{int64(in), int64(out)}, wt)
	return g.op("Add", []string{g.op("MatMul", []string{x, w}), g.weight(name + ".bias")})
}

func (g *graph) layerNorm(x, name string, eps float64) string {
	return g.op("LayerNormalization", []string{x, g.weight(name + ".weight"), g.weight(name + ".bias")},
		attrI("axis", -1), attrF("epsilon", float32(eps)))
}

// embeddings returns the normalised embeddings and the additive attention
// mask bias ([batch, 1, 1, seq]).
func (g *graph) embeddings(c Config) (string, string) {
	pre := c.prefix()
	word := g.op("Gather", []string{g.weight(pre + "embeddings.word_embeddings.weight"), "input_ids"})
	typ := g.op("Gather", []string{g.weight(pre + "embeddings.token_type_embeddings.weight"), "token_type_ids"})
	var pos string
	if c.ModelType == "xlm-roberta" { // RoBERTa: cumsum(mask)·mask + padding_idx
		cs := g.op("CumSum", []string{"attention_mask", g.constI("axis1", nil, 1)})
		ids := g.op("Add", []string{g.op("Mul", []string{cs, "attention_mask"}), g.constI("pad_idx", nil, int64(c.PadTokenID))})
		pos = g.op("Gather", []string{g.weight(pre + "embeddings.position_embeddings.weight"), ids})
	} else {
		seq := g.op("Gather", []string{g.op("Shape", []string{"input_ids"}), g.constI("one", nil, 1)})
		rng := g.op("Range", []string{g.constI("zero", nil, 0), seq, g.constI("step", nil, 1)})
		pos = g.op("Gather", []string{g.weight(pre + "embeddings.position_embeddings.weight"), rng})
	}
	x := g.op("Add", []string{g.op("Add", []string{word, typ}), pos})
	x = g.layerNorm(x, pre+"embeddings.LayerNorm", c.LayerNormEps)
	m := g.op("Cast", []string{"attention_mask"}, attrI("to", int64(onnx.TensorProto_FLOAT)))
	m = g.op("Unsqueeze", []string{m, g.constI("axes12", []int64{2}, 1, 2)})
	bias := g.op("Mul", []string{g.op("Sub", []string{g.constF("onef", nil, []float32{1}), m}), g.constF("neg", nil, []float32{-10000})})
	return x, bias
}

func (g *graph) layer(c Config, l, x, bias string) string {
	hd := c.Hidden / c.Heads
	split := g.constI(l+"split", []int64{4}, 0, 0, int64(c.Heads), int64(hd))
	heads := func(y string, perm ...int64) string {
		return g.op("Transpose", []string{g.op("Reshape", []string{y, split})}, attrInts("perm", perm...))
	}
	q := heads(g.linear(x, l+"attention.self.query"), 0, 2, 1, 3)
	k := heads(g.linear(x, l+"attention.self.key"), 0, 2, 3, 1)
	v := heads(g.linear(x, l+"attention.self.value"), 0, 2, 1, 3)
	s := g.op("Mul", []string{g.op("MatMul", []string{q, k}), g.constF(l+"scale", nil, []float32{float32(1 / math.Sqrt(float64(hd)))})})
	p := g.op("Softmax", []string{g.op("Add", []string{s, bias})}, attrI("axis", -1))
	ctx := g.op("Transpose", []string{g.op("MatMul", []string{p, v})}, attrInts("perm", 0, 2, 1, 3))
	ctx = g.op("Reshape", []string{ctx, g.constI(l+"merge", []int64{3}, 0, 0, int64(c.Hidden))})
	x = g.layerNorm(g.op("Add", []string{g.linear(ctx, l+"attention.output.dense"), x}), l+"attention.output.LayerNorm", c.LayerNormEps)
	f := g.linear(x, l+"intermediate.dense")
	erf := g.op("Erf", []string{g.op("Mul", []string{f, g.constF(l+"rsqrt2", nil, []float32{float32(1 / math.Sqrt2)})})})
	f = g.op("Mul", []string{g.op("Mul", []string{f, g.constF(l+"half", nil, []float32{0.5})}), g.op("Add", []string{erf, g.constF(l+"onee", nil, []float32{1})})})
	return g.layerNorm(g.op("Add", []string{g.linear(f, l+"output.dense"), x}), l+"output.LayerNorm", c.LayerNormEps)
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
	first := g.op("Gather", []string{x, g.constI("tok0", nil, 0)}, attrI("axis", 1))
	dense, out := "classifier.dense", "classifier.out_proj"
	if c.ModelType == "bert" {
		dense, out = "bert.pooler.dense", "classifier"
	}
	logits := g.linear(g.op("Tanh", []string{g.linear(first, dense)}), out)
	g.g.Node = append(g.g.Node, &onnx.NodeProto{OpType: "Identity", Input: []string{logits}, Output: []string{"logits"}})
	g.g.Output = append(g.g.Output, valueInfo("logits", onnx.TensorProto_FLOAT, "batch", 1))
}
