package cpu

import (
	"context"
	"fmt"
	"math"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/kernels"
)

// unwrap collects the first error while buffers are unwrapped, so each op
// reads as one list of operands.
type unwrap struct{ err error }

func (u *unwrap) f(x engine.Buffer, off int) []float32 {
	if u.err != nil {
		return nil
	}
	s, err := f32(x, off)
	u.err = err
	return s
}

func (u *unwrap) i(x engine.Buffer) []int32 {
	if u.err != nil {
		return nil
	}
	s, err := i32(x)
	u.err = err
	return s
}

// w is f for an op's output: a bound buffer (Bind) is read-only.
func (u *unwrap) w(x engine.Buffer, off int) []float32 {
	u.writable(x)
	return u.f(x, off)
}

// wi is i for an op's output.
func (u *unwrap) wi(x engine.Buffer) []int32 {
	u.writable(x)
	return u.i(x)
}

func (u *unwrap) writable(x engine.Buffer) {
	if b, ok := x.(*buffer); ok && b != nil && b.bound && u.err == nil {
		u.err = errReadOnly
	}
}

// oi is i for an optional index buffer: nil stays nil.
func (u *unwrap) oi(x engine.Buffer) []int32 {
	if x == nil {
		return nil
	}
	return u.i(x)
}

func (u *unwrap) l(x engine.Buffer) []int64 {
	if u.err != nil {
		return nil
	}
	s, err := i64(x)
	u.err = err
	return s
}

// Gemm implements engine.Ops. A plain product of a narrow weight (no
// transposes, alpha 1, beta 0, packed, N ≤ 256 and K ≤ 1024: a graph
// encoder's layers over many nodes) runs kernels.NarrowGemm, which beats a
// BLAS call's packing and threading there; the rest goes through
// kernels.Gemm.
func (*Backend) Gemm(op engine.GemmOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	g, err := gemmArgs(op)
	if err != nil {
		return err
	}
	if narrow(g) {
		if err := g.Check(); err != nil {
			return err
		}
		if err := kernels.NarrowGemm(g.A, g.B, g.C, g.M, g.N, g.K); err != nil || (g.Bias == nil && g.Act == engine.ActNone) {
			return err
		}
		return kernels.BiasAct(g.C, g.M, g.N, g.N, g.Bias, g.Act)
	}
	if pb, err := packedB(op, g); err != nil || pb != nil {
		if err != nil {
			return err
		}
		return kernels.GemmWithPacked(g, pb)
	}
	return kernels.Gemm(g)
}

// packKey names one packing of a bound buffer: where op(B) starts, its
// layout and shape.
type packKey struct {
	off, ld, k, n int
	trans         bool
}

// minPackedDim is the smallest K and N worth packing: below it a product
// is a few microseconds either way.
const minPackedDim = 32

// packedB returns op.B packed for kernels.GemmWithPacked when that kernel
// runs in SIMD here and B is a weight (BindWeight); the packing is made on
// first use and kept with the buffer. Every product by the weight then
// takes the packed kernel, whatever its rows: it sums each row in one
// order, so a row's result does not depend on the rows batched with it
// (measured against OpenBLAS called directly: with AVX-512, 0.92–1.36× at
// a transformer's 128 rows and 0.95–1.05× at 4096; with AVX2 on a Zen 3
// VM, 0.74–1.18× at 128 rows in one run and 1.06–1.19× at 25,600). It
// returns nil when the product should go to the BLAS.
func packedB(op engine.GemmOp, g kernels.GemmArgs) (*kernels.PackedB, error) {
	b, ok := op.B.(*buffer)
	if !ok || !b.weight || !kernels.PackedGemmFast() || g.TransA || g.Alpha != 1 || g.K < minPackedDim || g.N < minPackedDim {
		return nil, nil
	}
	if err := g.Check(); err != nil { // fills the packed leading dimensions
		return nil, err
	}
	key := packKey{off: op.OffB, ld: g.LDB, k: g.K, n: g.N, trans: g.TransB}
	b.mu.Lock()
	defer b.mu.Unlock()
	if pb := b.packs[key]; pb != nil {
		return pb, nil
	}
	pb, err := kernels.PackB(g.B, g.TransB, g.K, g.N, g.LDB)
	if err != nil {
		return nil, err
	}
	if b.packs == nil {
		b.packs = map[packKey]*kernels.PackedB{}
	}
	b.packs[key] = pb
	return pb, nil
}

func narrow(g kernels.GemmArgs) bool {
	packed := (g.LDA == 0 || g.LDA == g.K) && (g.LDB == 0 || g.LDB == g.N) && (g.LDC == 0 || g.LDC == g.N)
	return !g.TransA && !g.TransB && g.Alpha == 1 && g.Beta == 0 && packed && g.K > 0 && g.N <= 256 && g.K <= 1024
}

func gemmArgs(op engine.GemmOp) (kernels.GemmArgs, error) {
	var u unwrap
	g := kernels.GemmArgs{TransA: op.TransA, TransB: op.TransB, M: op.M, N: op.N, K: op.K, Alpha: op.Alpha, Beta: op.Beta,
		A: u.f(op.A, op.OffA), LDA: op.LDA, B: u.f(op.B, op.OffB), LDB: op.LDB, C: u.w(op.C, op.OffC), LDC: op.LDC,
		Bias: u.f(op.Bias, 0), Act: op.Act}
	return g, u.err
}

// BatchedGemm implements engine.Ops.
func (*Backend) BatchedGemm(op engine.GemmOp, batch, strideA, strideB, strideC int) error {
	if err := engine.CheckBatch(op, batch, strideA, strideB, strideC); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	g, err := gemmArgs(op)
	if err != nil {
		return err
	}
	return kernels.BatchedGemm(g, batch, strideA, strideB, strideC)
}

// BiasAct implements engine.Ops.
func (*Backend) BiasAct(op engine.BiasActOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	x, bias := u.w(op.X, op.Off), u.f(op.Bias, 0)
	if u.err != nil {
		return u.err
	}
	return kernels.BiasAct(x, op.Rows, op.Cols, op.LD, bias, op.Act)
}

// LayerNorm implements engine.Ops.
func (*Backend) LayerNorm(op engine.LayerNormOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	x, g, b, out := u.f(op.X, 0), u.f(op.Gamma, 0), u.f(op.Beta, 0), u.w(op.Out, 0)
	if u.err != nil {
		return u.err
	}
	kernels.LayerNorm(x, g, b, out, op.Rows, op.Cols, op.Eps)
	return nil
}

// Activate implements engine.Ops.
func (*Backend) Activate(op engine.ActivateOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	x, out := u.f(op.X, 0), u.w(op.Out, 0)
	if u.err != nil {
		return u.err
	}
	kernels.Activate(op.Act, x[:op.N], out[:op.N])
	return nil
}

// Softmax implements engine.Ops.
func (*Backend) Softmax(op engine.SoftmaxOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	x, m, out := u.f(op.X, 0), u.f(op.Mask, 0), u.w(op.Out, 0)
	if u.err != nil {
		return u.err
	}
	kernels.Softmax(x, m, out, op.Rows, op.Cols)
	return nil
}

// Attention implements engine.Ops.
func (*Backend) Attention(op engine.AttentionOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	a := kernels.AttentionArgs{Batch: op.Batch, Seq: op.Seq, Heads: op.Heads, HeadDim: op.HeadDim,
		Q: u.f(op.Q, 0), K: u.f(op.K, 0), V: u.f(op.V, 0), Out: u.w(op.Out, 0), Lengths: u.i(op.Lengths)}
	if u.err != nil {
		return u.err
	}
	if err := op.CheckLengths(a.Lengths); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	return kernels.Attention(a)
}

// SpMM implements engine.Ops.
func (*Backend) SpMM(op engine.SpMMOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	a := kernels.CSRMatrix{Rows: op.Rows, Cols: op.Cols, Ptr: u.l(op.Ptr), Idx: u.i(op.Idx), Val: u.f(op.Val, 0)}
	x, y := u.f(op.X, 0), u.w(op.Y, 0)
	if u.err != nil {
		return u.err
	}
	if err := op.CheckCSR(a.Ptr, a.Idx); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	return kernels.SpMM(a, x, op.D, y)
}

// Axpby implements engine.Ops.
func (*Backend) Axpby(op engine.AxpbyOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	x, y, out := u.f(op.X, 0), u.f(op.Y, 0), u.w(op.Out, 0)
	if u.err != nil {
		return u.err
	}
	for i := 0; i < op.N; i++ {
		out[i] = op.Alpha*x[i] + op.Beta*y[i]
	}
	return nil
}

// EdgeAttention implements engine.Ops.
func (*Backend) EdgeAttention(op engine.EdgeAttentionOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	a := kernels.EdgeAttentionArgs{N: op.N, Heads: op.Heads, HeadDim: op.HeadDim, Ptr: u.l(op.Ptr), Src: u.i(op.Src), ERow: u.oi(op.ERow),
		K: u.f(op.K, 0), Q: u.f(op.Q, 0), V: u.f(op.V, 0), E: u.f(op.E, 0), Out: u.w(op.Out, 0)}
	if u.err != nil {
		return u.err
	}
	if err := op.CheckEdges(a.Ptr, a.Src, a.ERow); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	return kernels.EdgeAttention(a)
}

// TopK implements engine.Ops.
func (*Backend) TopK(op engine.TopKOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	s, idx, sc := u.f(op.Scores, 0), u.wi(op.OutIdx), u.w(op.OutScore, 0)
	if u.err != nil {
		return u.err
	}
	for r, hits := range kernels.TopKRows(s, op.Rows, op.Cols, op.K) {
		for j := 0; j < op.K; j++ {
			idx[r*op.K+j], sc[r*op.K+j] = -1, float32(math.Inf(-1))
			if j < len(hits) {
				idx[r*op.K+j], sc[r*op.K+j] = hits[j].Index, hits[j].Score
			}
		}
	}
	return nil
}

// FlatIP implements engine.Ops with the batched AVX top-k scan.
func (*Backend) FlatIP(op engine.FlatIPOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	x, q, idx, sc := u.f(op.X, 0), u.f(op.Q, 0), u.wi(op.OutIdx), u.w(op.OutScore, 0)
	if u.err != nil {
		return u.err
	}
	hits, err := kernels.FlatIP(context.Background(), x, op.N, op.D, q, op.B, op.K, 0)
	if err != nil {
		return err
	}
	for r, hs := range hits {
		for j := 0; j < op.K; j++ {
			idx[r*op.K+j], sc[r*op.K+j] = -1, float32(math.Inf(-1))
			if j < len(hs) {
				idx[r*op.K+j], sc[r*op.K+j] = hs[j].Index, hs[j].Score
			}
		}
	}
	return nil
}

// ScoreRows implements engine.RowScorer with FlatIP's dot kernel over
// row blocks on every core: the BLAS's one-row GEMM took 6.6–7.2 ms over
// 10⁵ × 256 vectors against this kernel's 2.9–3.1 ms (2 cores), and this
// way a row scores as it does in FlatIP.
func (*Backend) ScoreRows(op engine.ScoreRowsOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	x, q, out := u.f(op.X, 0), u.f(op.Q, 0), u.w(op.Out, 0)
	if u.err != nil {
		return u.err
	}
	return kernels.ScoreAll(x[:op.N*op.D], op.N, op.D, q[:op.D], out[:op.N])
}

// Smooth implements engine.Smoother.
func (*Backend) Smooth(op engine.SmoothOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	h, out := u.f(op.H, 0), u.w(op.Out, 0)
	if u.err != nil {
		return u.err
	}
	return kernels.Smooth(kernels.SmoothArgs{Adj: kernels.CSRMatrix{Rows: op.M, Cols: op.M, Ptr: op.AdjPtr, Idx: op.AdjIdx},
		Deg: op.Deg, H: h, Out: out, D: op.D, Alpha: op.Alpha, KeepIsolated: op.KeepIsolated})
}

// LowRankProject implements engine.LowRankProjector.
func (*Backend) LowRankProject(op engine.LowRankOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	a := kernels.LowRankArgs{L: op.L, De: op.De, R: op.R, Dkv: op.Dkv, M: u.f(op.M, 0), Gamma: u.f(op.Gamma, 0), Beta: u.f(op.Beta, 0),
		A: u.f(op.A, 0), B: u.f(op.B, 0), Out: u.w(op.Out, 0), Eps: op.Eps}
	if u.err != nil {
		return u.err
	}
	return kernels.LowRankProject(a)
}

// JointAttention implements engine.JointAttender.
func (*Backend) JointAttention(op engine.JointAttentionOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	a := kernels.JointAttentionArgs{N: op.N, Lm: op.Lm, Lt: op.Lt, D: op.D, Dv: op.Dv, Q: u.f(op.Q, op.OffQ), KMem: u.f(op.KMem, op.OffKMem),
		VMem: u.f(op.VMem, op.OffVMem), KText: u.f(op.KText, op.OffKText), VText: u.f(op.VText, op.OffVText), Out: u.w(op.Out, op.OffOut), Causal: op.Causal,
		LDQ: op.LDQ, LDKMem: op.LDKMem, LDVMem: op.LDVMem, LDKText: op.LDKText, LDVText: op.LDVText, LDOut: op.LDOut}
	if u.err != nil {
		return u.err
	}
	return kernels.JointAttention(a)
}

// RMSNorm implements engine.DecoderOps.
func (*Backend) RMSNorm(op engine.RMSNormOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	x, g, out := u.f(op.X, 0), u.f(op.Gamma, 0), u.w(op.Out, 0)
	if u.err != nil {
		return u.err
	}
	kernels.RMSNorm(x, g, out, op.Rows, op.Cols, op.Eps)
	return nil
}

// RoPE implements engine.DecoderOps.
func (*Backend) RoPE(op engine.RoPEOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	x := u.w(op.X, op.Off)
	if u.err != nil {
		return u.err
	}
	return kernels.RoPE(kernels.RoPEArgs{X: x, Rows: op.Rows, Heads: op.Heads, HeadDim: op.HeadDim, LD: op.LD, Pos0: op.Pos0, InvFreq: op.InvFreq})
}

// SwiGLU implements engine.DecoderOps.
func (*Backend) SwiGLU(op engine.SwiGLUOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	x, out := u.f(op.X, 0), u.w(op.Out, 0)
	if u.err != nil {
		return u.err
	}
	kernels.SwiGLU(x, out, op.Rows, op.Cols)
	return nil
}

// GAT implements engine.Fused.
func (*Backend) GAT(op engine.GATOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	h, s, out := u.f(op.H, 0), u.f(op.S, 0), u.w(op.Out, 0)
	if u.err != nil {
		return u.err
	}
	return kernels.GAT(kernels.GATArgs{N: op.N, D: op.D, Ptr: op.AdjPtr, Idx: op.AdjIdx, H: h, S: s, Out: out, Slope: op.Slope})
}

// Mul implements engine.EncoderOps.
func (*Backend) Mul(op engine.MulOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	x, y, out := u.f(op.X, 0), u.f(op.Y, 0), u.w(op.Out, 0)
	if u.err != nil {
		return u.err
	}
	return kernels.Mul(x, y, out, op.N, op.Accumulate)
}

// CopyRows implements engine.EncoderOps.
func (*Backend) CopyRows(op engine.CopyRowsOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	a := kernels.CopyRowsArgs{N: op.N, Cols: op.Cols, X: u.f(op.X, 0), Out: u.w(op.Out, 0), Src: u.oi(op.Src), Dst: u.oi(op.Dst), Add: op.Add}
	if u.err != nil {
		return u.err
	}
	if err := op.CheckIndices(a.Src, a.Dst); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	return kernels.CopyRows(a)
}

// EdgeMessage implements engine.EncoderOps.
func (*Backend) EdgeMessage(op engine.EdgeMessageOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	var u unwrap
	a := kernels.EdgeMessageArgs{N: op.N, D: op.D, Rows: op.Rows, Ptr: u.l(op.Ptr), Src: u.i(op.Src), ERow: u.i(op.ERow),
		M: u.f(op.M, 0), F: u.f(op.F, 0), Out: u.w(op.Out, 0)}
	if u.err != nil {
		return u.err
	}
	if err := op.CheckEdges(a.Ptr, a.Src, a.ERow); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	return kernels.EdgeMessage(a)
}

var errReadOnly = fmt.Errorf("cpu: an op's output: %w", engine.ErrReadOnly)
