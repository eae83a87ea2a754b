package bert

import (
	"fmt"

	"github.com/advancedclimatesystems/gonnx/onnx"
	"google.golang.org/protobuf/proto"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/internal/safefile"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/onnxgraph"
	"github.com/gleaner-rag/gleaner/models/safetensors"
)

// HeadFromONNX reads the classification head from an ONNX model's
// initializers (see TensorsFromONNX).
func HeadFromONNX(path string, cfg Config) (*models.Head, error) {
	t, err := TensorsFromONNX(path)
	if err != nil {
		return nil, err
	}
	p := &picker{t: t}
	h := loadHead(cfg, p)
	if p.err != nil {
		return nil, p.err
	}
	if h == nil {
		return nil, fmt.Errorf("bert: %s has no classification head initializers", path)
	}
	return h, h.Validate()
}

// LoadONNX builds a native model from the weights stored as an ONNX
// model's initializers, so one model.onnx serves both runtimes.
func LoadONNX(path string, cfg Config, b engine.Backend) (*Model, error) {
	t, err := TensorsFromONNX(path)
	if err != nil {
		return nil, err
	}
	return New(cfg, t, b)
}

// TensorsFromONNX reads an ONNX model's float initializers under
// HuggingFace names: "x.weight" as stored (out × in), or gleaner's export
// "x.weight_t" (in × out) transposed back. Exports that rename weights
// (e.g. "onnx::MatMul_123") are not recognised; use safetensors for them.
func TensorsFromONNX(path string) (map[string]safetensors.Tensor, error) {
	b, err := safefile.Read(path, safefile.MaxWeights)
	if err != nil {
		return nil, err
	}
	var m onnx.ModelProto
	if err := proto.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("bert: %s: %w", path, err)
	}
	t := map[string]safetensors.Tensor{}
	for _, in := range m.GetGraph().GetInitializer() {
		if in.GetDataType() != int32(onnx.TensorProto_FLOAT) || len(in.GetFloatData()) == 0 {
			continue
		}
		shape := make([]int, len(in.GetDims()))
		for i, d := range in.GetDims() {
			shape[i] = int(d)
		}
		name, data := in.GetName(), in.GetFloatData()
		if len(shape) == 2 && len(name) > 2 && name[len(name)-2:] == "_t" {
			name, shape, data = name[:len(name)-2], []int{shape[1], shape[0]}, onnxgraph.Transposed(data, shape[0], shape[1])
		}
		t[name] = safetensors.Tensor{Shape: shape, Data: data}
	}
	return t, nil
}
