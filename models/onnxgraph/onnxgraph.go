// Package onnxgraph builds ONNX graphs node by node: how gleaner writes
// test models (BERT encoders, Llama decoders) for ONNX Runtime parity
// checks from the same weights its native models run.
package onnxgraph

import (
	"fmt"
	"io"

	"github.com/advancedclimatesystems/gonnx/onnx"
	"google.golang.org/protobuf/proto"
)

// Graph is a graph under construction; node outputs are named
// "<OpType>_<n>".
type Graph struct {
	G *onnx.GraphProto
	n int
}

// New starts a graph called name.
func New(name string) *Graph { return &Graph{G: &onnx.GraphProto{Name: name}} }

// Op appends a node and returns its (first) output name.
func (g *Graph) Op(typ string, inputs []string, attrs ...*onnx.AttributeProto) string {
	g.n++
	out := fmt.Sprintf("%s_%d", typ, g.n)
	g.G.Node = append(g.G.Node, &onnx.NodeProto{OpType: typ, Name: out, Input: inputs, Output: []string{out}, Attribute: attrs})
	return out
}

// ConstF and ConstI add initializers and return their names.
func (g *Graph) ConstF(name string, dims []int64, data []float32) string {
	g.G.Initializer = append(g.G.Initializer, &onnx.TensorProto{Name: name, Dims: dims, DataType: int32(onnx.TensorProto_FLOAT), FloatData: data})
	return name
}

func (g *Graph) ConstI(name string, dims []int64, data ...int64) string {
	g.G.Initializer = append(g.G.Initializer, &onnx.TensorProto{Name: name, Dims: dims, DataType: int32(onnx.TensorProto_INT64), Int64Data: data})
	return name
}

// Input and Output declare graph inputs and outputs; dims are ints (fixed)
// or strings (symbolic).
func (g *Graph) Input(name string, elem onnx.TensorProto_DataType, dims ...any) {
	g.G.Input = append(g.G.Input, ValueInfo(name, elem, dims...))
}

// Output names value as the graph output name.
func (g *Graph) Output(value, name string, elem onnx.TensorProto_DataType, dims ...any) {
	g.G.Node = append(g.G.Node, &onnx.NodeProto{OpType: "Identity", Input: []string{value}, Output: []string{name}})
	g.G.Output = append(g.G.Output, ValueInfo(name, elem, dims...))
}

// Write marshals the graph as an opset-17 model.
func (g *Graph) Write(w io.Writer) error {
	m := &onnx.ModelProto{IrVersion: 8, ProducerName: "gleaner", Graph: g.G,
		OpsetImport: []*onnx.OperatorSetIdProto{{Domain: "", Version: 17}}}
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// ValueInfo describes a tensor's type and shape.
func ValueInfo(name string, elem onnx.TensorProto_DataType, dims ...any) *onnx.ValueInfoProto {
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

// AttrI, AttrF and AttrInts make node attributes.
func AttrI(name string, v int64) *onnx.AttributeProto {
	return &onnx.AttributeProto{Name: name, Type: onnx.AttributeProto_INT, I: v}
}

func AttrF(name string, v float32) *onnx.AttributeProto {
	return &onnx.AttributeProto{Name: name, Type: onnx.AttributeProto_FLOAT, F: v}
}

func AttrInts(name string, v ...int64) *onnx.AttributeProto {
	return &onnx.AttributeProto{Name: name, Type: onnx.AttributeProto_INTS, Ints: v}
}

// Transposed returns the in × out transpose of a HuggingFace out × in
// weight (ONNX MatMul multiplies x · W).
func Transposed(w []float32, out, in int) []float32 {
	t := make([]float32, len(w))
	for o := 0; o < out; o++ {
		for i := 0; i < in; i++ {
			t[i*out+o] = w[o*in+i]
		}
	}
	return t
}
