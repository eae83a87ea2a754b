package bert

import (
	"fmt"
	"os"

	"github.com/advancedclimatesystems/gonnx/onnx"
	"google.golang.org/protobuf/proto"

	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/safetensors"
)

// HeadFromONNX reads the classification head from an ONNX model's
// initializers: HuggingFace names ("classifier.dense.weight", out × in) or
// gleaner's export ("…weight_t", in × out).
func HeadFromONNX(path string, cfg Config) (*models.Head, error) {
	b, err := os.ReadFile(path)
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
			name, shape, data = name[:len(name)-2], []int{shape[1], shape[0]}, transpose(data, shape[0], shape[1])
		}
		t[name] = safetensors.Tensor{Shape: shape, Data: data}
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

func transpose(x []float32, rows, cols int) []float32 {
	out := make([]float32, len(x))
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			out[c*rows+r] = x[r*cols+c]
		}
	}
	return out
}
