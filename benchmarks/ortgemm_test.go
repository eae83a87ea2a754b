//go:build cgo

package benchmarks

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/advancedclimatesystems/gonnx/onnx"
	ortgo "github.com/yalue/onnxruntime_go"

	"github.com/gleaner-rag/gleaner/models/onnxgraph"
	"github.com/gleaner-rag/gleaner/models/ort"
)

// ortGemm is ONNX Runtime running one MatMul of an m×k input by a
// constant k×n weight (MLAS's packed SGEMM, intra-op threads = cores):
// the product the native encoder competes with, on the same operands.
type ortGemm struct {
	sess *ortgo.DynamicAdvancedSession
	in   *ortgo.Tensor[float32]
	out  *ortgo.Tensor[float32]
}

// newOrtGemm builds the session, or returns nil when ONNX Runtime is not
// installed (make ort-lib). The session is closed when b ends, or earlier
// by close.
func newOrtGemm(b *testing.B, m, k, n int, a, w []float32) *ortGemm {
	b.Helper()
	if ort.Init() != nil {
		return nil
	}
	g := onnxgraph.New("matmul")
	g.Input("x", onnx.TensorProto_FLOAT, m, k)
	y := g.Op("MatMul", []string{"x", g.ConstF("w", []int64{int64(k), int64(n)}, w)})
	g.Output(y, "y", onnx.TensorProto_FLOAT, m, n)
	path := filepath.Join(b.TempDir(), "matmul.onnx")
	f, err := os.Create(path)
	must(b, err)
	must(b, g.Write(f))
	must(b, f.Close())
	opts, err := ortgo.NewSessionOptions()
	must(b, err)
	defer opts.Destroy()
	must(b, opts.SetIntraOpNumThreads(runtime.GOMAXPROCS(0)))
	o := &ortGemm{}
	b.Cleanup(o.close)
	if o.sess, err = ortgo.NewDynamicAdvancedSession(path, []string{"x"}, []string{"y"}, opts); err != nil {
		b.Fatal(err)
	}
	if o.in, err = ortgo.NewTensor(ortgo.NewShape(int64(m), int64(k)), a); err != nil {
		b.Fatal(err)
	}
	if o.out, err = ortgo.NewEmptyTensor[float32](ortgo.NewShape(int64(m), int64(n))); err != nil {
		b.Fatal(err)
	}
	return o
}

func (o *ortGemm) run(b *testing.B) {
	must(b, o.sess.Run([]ortgo.Value{o.in}, []ortgo.Value{o.out}))
}

// close frees the session and its tensors; a second call does nothing.
func (o *ortGemm) close() {
	if o.sess != nil {
		o.sess.Destroy()
	}
	if o.in != nil {
		o.in.Destroy()
	}
	if o.out != nil {
		o.out.Destroy()
	}
	o.sess, o.in, o.out = nil, nil, nil
}
