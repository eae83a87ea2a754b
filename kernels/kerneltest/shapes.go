package kerneltest

import (
	"errors"
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
)

// testShapes holds every backend to the ops' one shape rule (their engine
// Check): each op with one buffer an element short, or an impossible
// dimension, is refused with an error wrapping engine.ErrShape, before any
// work — the same refusal on every backend.
func testShapes(h *H) {
	f := func(n int) engine.Buffer { return h.Up(make([]float32, n)) }
	i32 := func(v ...int32) engine.Buffer { return h.UpI32(v) }
	i64 := func(v ...int64) engine.Buffer { return h.UpI64(v) }
	b := h.B
	cases := []struct {
		what string
		call func() error
	}{
		{"gemm short A", func() error { return b.Gemm(engine.GemmOp{M: 2, N: 2, K: 2, Alpha: 1, A: f(3), B: f(4), C: f(4)}) }},
		{"gemm short B (transposed)", func() error {
			return b.Gemm(engine.GemmOp{TransB: true, M: 2, N: 3, K: 2, Alpha: 1, A: f(4), B: f(5), C: f(6)})
		}},
		{"gemm short C at an offset", func() error {
			return b.Gemm(engine.GemmOp{M: 2, N: 2, K: 1, Alpha: 1, A: f(2), B: f(2), C: f(5), OffC: 2})
		}},
		{"gemm short bias", func() error {
			return b.Gemm(engine.GemmOp{M: 1, N: 3, K: 1, Alpha: 1, A: f(1), B: f(3), C: f(3), Bias: f(2)})
		}},
		{"gemm small leading dimension", func() error {
			return b.Gemm(engine.GemmOp{M: 2, N: 2, K: 2, Alpha: 1, A: f(4), B: f(4), C: f(4), LDA: 1})
		}},
		{"gemm int operand", func() error { return b.Gemm(engine.GemmOp{M: 1, N: 1, K: 1, Alpha: 1, A: i32(0), B: f(1), C: f(1)}) }},
		{"batched gemm short last C", func() error {
			return b.BatchedGemm(engine.GemmOp{M: 1, N: 2, K: 1, Alpha: 1, A: f(1), B: f(2), C: f(5)}, 3, 0, 0, 2)
		}},
		{"bias_act short", func() error { return b.BiasAct(engine.BiasActOp{X: f(5), Rows: 2, Cols: 3}) }},
		{"layernorm short gamma", func() error {
			return b.LayerNorm(engine.LayerNormOp{X: f(6), Gamma: f(2), Beta: f(3), Out: f(6), Rows: 2, Cols: 3})
		}},
		{"activate short out", func() error { return b.Activate(engine.ActivateOp{X: f(4), Out: f(3), N: 4}) }},
		{"softmax short mask", func() error { return b.Softmax(engine.SoftmaxOp{X: f(6), Mask: f(5), Out: f(6), Rows: 2, Cols: 3}) }},
		{"attention short V", func() error {
			return b.Attention(engine.AttentionOp{Batch: 1, Seq: 2, Heads: 1, HeadDim: 2, Q: f(4), K: f(4), V: f(3), Out: f(4), Lengths: i32(2)})
		}},
		{"attention length past Seq", func() error {
			return b.Attention(engine.AttentionOp{Batch: 1, Seq: 2, Heads: 1, HeadDim: 2, Q: f(4), K: f(4), V: f(4), Out: f(4), Lengths: i32(3)})
		}},
		{"spmm short X", func() error {
			return b.SpMM(engine.SpMMOp{Rows: 1, Cols: 2, D: 2, Ptr: i64(0, 1), Idx: i32(1), X: f(3), Y: f(2)})
		}},
		{"spmm short Idx", func() error {
			return b.SpMM(engine.SpMMOp{Rows: 1, Cols: 2, D: 1, Ptr: i64(0, 2), Idx: i32(1), X: f(2), Y: f(1)})
		}},
		{"axpby short Y", func() error { return b.Axpby(engine.AxpbyOp{N: 3, X: f(3), Y: f(2), Out: f(3)}) }},
		{"mul short X", func() error { return b.Mul(engine.MulOp{N: 3, X: f(2), Y: f(3), Out: f(3)}) }},
		{"edge attention short Q", func() error {
			return b.EdgeAttention(engine.EdgeAttentionOp{N: 2, Heads: 1, HeadDim: 2, Ptr: i64(0, 1, 1), Src: i32(1), K: f(4), Q: f(3), V: f(4), E: f(2), Out: f(4)})
		}},
		{"edge attention short E", func() error {
			return b.EdgeAttention(engine.EdgeAttentionOp{N: 2, Heads: 1, HeadDim: 2, Ptr: i64(0, 1, 2), Src: i32(1, 0), K: f(4), Q: f(4), V: f(4), E: f(3), Out: f(4)})
		}},
		{"edge attention more edges than sources", func() error {
			return b.EdgeAttention(engine.EdgeAttentionOp{N: 1, Heads: 1, HeadDim: 1, Ptr: i64(0, 3), Src: i32(0), K: f(1), Q: f(1), V: f(1), E: f(3), Out: f(1)})
		}},
		{"edge message short F", func() error {
			return b.EdgeMessage(engine.EdgeMessageOp{N: 1, D: 2, Rows: 2, Ptr: i64(0, 1), Src: i32(0), ERow: i32(0), M: f(2), F: f(3), Out: f(2)})
		}},
		{"topk short scores", func() error {
			return b.TopK(engine.TopKOp{Scores: f(5), Rows: 2, Cols: 3, K: 1, OutIdx: i32(0, 0), OutScore: f(2)})
		}},
		{"flatip short queries", func() error {
			return b.FlatIP(engine.FlatIPOp{X: f(6), Q: f(3), N: 3, D: 2, B: 2, K: 1, OutIdx: i32(0, 0), OutScore: f(2)})
		}},
		{"smooth short H", func() error {
			return engine.Smooth(b, engine.SmoothOp{M: 2, D: 2, AdjPtr: []int64{0, 1, 2}, AdjIdx: []int32{1, 0}, Deg: []float32{1, 1}, H: f(3), Out: f(4), Alpha: 0.5})
		}},
		{"low-rank short B", func() error {
			return engine.LowRankProject(b, engine.LowRankOp{L: 1, De: 2, R: 2, Dkv: 2, M: f(2), Gamma: f(2), Beta: f(2), A: f(4), B: f(3), Out: f(2), Eps: 1e-5})
		}},
		{"joint attention short text keys", func() error {
			return engine.JointAttention(b, engine.JointAttentionOp{N: 1, Lm: 1, Lt: 2, D: 2, Dv: 2, Q: f(2), KMem: f(2), VMem: f(2), KText: f(3), VText: f(4), Out: f(2)})
		}},
		{"rmsnorm short out", func() error { return b.RMSNorm(engine.RMSNormOp{X: f(6), Gamma: f(3), Out: f(5), Rows: 2, Cols: 3}) }},
		{"rope odd head width", func() error {
			return b.RoPE(engine.RoPEOp{X: f(6), Rows: 2, Heads: 1, HeadDim: 3, InvFreq: []float32{1}})
		}},
		{"swiglu short X", func() error { return b.SwiGLU(engine.SwiGLUOp{X: f(11), Out: f(6), Rows: 2, Cols: 3}) }},
		{"gat short S", func() error {
			return engine.GAT(b, engine.GATOp{N: 2, D: 1, AdjPtr: []int64{0, 1, 2}, AdjIdx: []int32{1, 0}, H: f(2), S: f(3), Out: f(2), Slope: 0.2})
		}},
		{"copy rows short Src", func() error {
			return b.CopyRows(engine.CopyRowsOp{N: 2, Cols: 1, X: f(2), Out: f(2), Src: i32(0)})
		}},
		{"copy rows zero columns", func() error { return b.CopyRows(engine.CopyRowsOp{N: 1, Cols: 0, X: f(2), Out: f(2)}) }},
	}
	for _, c := range cases {
		h.Run(c.what, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: panicked instead of returning an error: %v", c.what, r)
				}
			}()
			err := c.call()
			switch {
			case errors.Is(err, engine.ErrNotImplemented):
				t.Skipf("%s: %v", c.what, err)
			case !errors.Is(err, engine.ErrShape):
				t.Errorf("%s: %v, want an error wrapping engine.ErrShape (the op's Check)", c.what, err)
			}
		})
	}
}
