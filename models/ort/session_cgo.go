//go:build cgo

package ort

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	ortgo "github.com/yalue/onnxruntime_go"
)

var (
	initOnce sync.Once
	initErr  error
)

// Init loads the library once per process.
func Init() error {
	initOnce.Do(func() {
		p, err := LibraryPath()
		if err != nil {
			initErr = err
			return
		}
		ortgo.SetSharedLibraryPath(p)
		if err := ortgo.InitializeEnvironment(); err != nil {
			initErr = fmt.Errorf("ort: loading %s: %w", p, err)
		}
	})
	return initErr
}

// Session is one loaded model. Run is safe for concurrent use.
type Session struct {
	s       *ortgo.DynamicAdvancedSession
	outputs []string
}

// Open loads an ONNX encoder with inputs input_ids, attention_mask and
// token_type_ids and the given outputs, with intra-op threads set to the
// number of cores (one session serves all callers).
func Open(path string, outputs ...string) (*Session, error) {
	return OpenIO(path, []string{"input_ids", "attention_mask", "token_type_ids"}, outputs)
}

// OpenIO loads an ONNX model with the named inputs and outputs (Run is for
// encoders with Open's three inputs; RunInt64 feeds any int64 inputs).
func OpenIO(path string, inputs, outputs []string) (*Session, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	opts, err := ortgo.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	defer opts.Destroy()
	if err := opts.SetIntraOpNumThreads(runtime.GOMAXPROCS(0)); err != nil {
		return nil, err
	}
	s, err := ortgo.NewDynamicAdvancedSession(path, inputs, outputs, opts)
	if err != nil {
		return nil, fmt.Errorf("ort: %s: %w", path, err)
	}
	return &Session{s: s, outputs: outputs}, nil
}

// Close frees the session.
func (s *Session) Close() error { return s.s.Destroy() }

// Run feeds a right-padded batch (ids and types per sequence; padding uses
// pad) and returns each output's data, row-major, with the padded length.
func (s *Session) Run(ids, types [][]int32, pad int32) ([][]float32, int, error) {
	b, seq := len(ids), 0
	for _, x := range ids {
		seq = max(seq, len(x))
	}
	if b == 0 || seq == 0 {
		return nil, 0, errors.New("ort: empty batch")
	}
	in := [3][]int64{make([]int64, b*seq), make([]int64, b*seq), make([]int64, b*seq)}
	for i, x := range ids {
		for p := 0; p < seq; p++ {
			in[0][i*seq+p] = int64(pad)
			if p < len(x) {
				in[0][i*seq+p], in[1][i*seq+p] = int64(x[p]), 1
				if types != nil {
					in[2][i*seq+p] = int64(types[i][p])
				}
			}
		}
	}
	var inputs []ortgo.Value
	for _, data := range in {
		t, err := ortgo.NewTensor(ortgo.NewShape(int64(b), int64(seq)), data)
		if err != nil {
			return nil, 0, err
		}
		defer t.Destroy()
		inputs = append(inputs, t)
	}
	res, err := s.run(inputs)
	return res, seq, err
}

// RunInt64 feeds int64 tensors of one shape, in the order of the session's
// inputs, and returns each float32 output, row-major.
func (s *Session) RunInt64(shape []int64, data ...[]int64) ([][]float32, error) {
	var inputs []ortgo.Value
	for _, d := range data {
		t, err := ortgo.NewTensor(ortgo.NewShape(shape...), d)
		if err != nil {
			return nil, err
		}
		defer t.Destroy()
		inputs = append(inputs, t)
	}
	return s.run(inputs)
}

func (s *Session) run(inputs []ortgo.Value) ([][]float32, error) {
	outs := make([]ortgo.Value, len(s.outputs))
	if err := s.s.Run(inputs, outs); err != nil {
		return nil, fmt.Errorf("ort: run: %w", err)
	}
	res := make([][]float32, len(outs))
	for i, o := range outs {
		defer o.Destroy()
		t, ok := o.(*ortgo.Tensor[float32])
		if !ok {
			return nil, fmt.Errorf("ort: output %q is %T, want float32", s.outputs[i], o)
		}
		res[i] = append([]float32(nil), t.GetData()...)
	}
	return res, nil
}
