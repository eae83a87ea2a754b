//go:build cgo && !purego

package emu

/*
#include "launch.h"
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/gleaner-rag/gleaner/cuda"
	"github.com/gleaner-rag/gleaner/engine"
)

// Axpby launches axpby.cu.
func (e *Backend) Axpby(op engine.AxpbyOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	x, err1 := e.f32(op.X, 0)
	y, err2 := e.f32(op.Y, 0)
	out, err3 := e.out32(op.Out, 0)
	if err := firstErr(err1, err2, err3); err != nil {
		return err
	}
	l := cuda.Elementwise(op.N)
	C.emu_axpby(C.uint(l.Grid), C.uint(l.Block), C.int(op.N), C.float(op.Alpha), fp(x), C.float(op.Beta), fp(y), fp(out))
	return nil
}

// Activate launches activate.cu.
func (e *Backend) Activate(op engine.ActivateOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	x, err1 := e.f32(op.X, 0)
	out, err2 := e.out32(op.Out, 0)
	if err := firstErr(err1, err2); err != nil {
		return err
	}
	l := cuda.Elementwise(op.N)
	C.emu_activate(C.uint(l.Grid), C.uint(l.Block), C.int(op.Act), C.int(op.N), fp(x), fp(out))
	return nil
}

// BiasAct launches biasact.cu.
func (e *Backend) BiasAct(op engine.BiasActOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	x, err1 := e.out32(op.X, op.Off)
	bias, err2 := e.f32(op.Bias, 0)
	if err := firstErr(err1, err2); err != nil {
		return err
	}
	ld := op.LD
	if ld == 0 {
		ld = op.Cols
	}
	l := cuda.Rows(op.Rows)
	C.emu_bias_act(C.uint(l.Grid), C.uint(l.Block), C.int(op.Rows), C.int(op.Cols), C.int(ld), fp(bias), C.int(op.Act), fp(x))
	return nil
}

// Softmax launches softmax.cu.
func (e *Backend) Softmax(op engine.SoftmaxOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	x, err1 := e.f32(op.X, 0)
	m, err2 := e.f32(op.Mask, 0)
	out, err3 := e.out32(op.Out, 0)
	if err := firstErr(err1, err2, err3); err != nil {
		return err
	}
	l := cuda.Rows(op.Rows)
	C.emu_softmax(C.uint(l.Grid), C.uint(l.Block), C.int(op.Rows), C.int(op.Cols), fp(x), fp(m), fp(out))
	return nil
}

// LayerNorm launches layernorm.cu.
func (e *Backend) LayerNorm(op engine.LayerNormOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	x, err1 := e.f32(op.X, 0)
	g, err2 := e.f32(op.Gamma, 0)
	b, err3 := e.f32(op.Beta, 0)
	out, err4 := e.out32(op.Out, 0)
	if err := firstErr(err1, err2, err3, err4); err != nil {
		return err
	}
	l := cuda.Rows(op.Rows)
	C.emu_layer_norm(C.uint(l.Grid), C.uint(l.Block), C.int(op.Rows), C.int(op.Cols), fp(x), fp(g), fp(b), C.float(op.Eps), fp(out))
	return nil
}

// JointAttention launches the fused jointattn.cu, with an N × (Lm+Lt)
// scratch for the scores.
func (e *Backend) JointAttention(op engine.JointAttentionOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	q, err1 := e.f32(op.Q, op.OffQ)
	km, err2 := e.f32(op.KMem, op.OffKMem)
	vm, err3 := e.f32(op.VMem, op.OffVMem)
	kt, err4 := e.f32(op.KText, op.OffKText)
	vt, err5 := e.f32(op.VText, op.OffVText)
	out, err6 := e.out32(op.Out, op.OffOut)
	if err := firstErr(err1, err2, err3, err4, err5, err6); err != nil {
		return err
	}
	ld := op.LeadingDims()
	if op.N == 0 {
		return nil
	}
	scratch := make([]float32, op.N*(op.Lm+op.Lt))
	l := cuda.Rows(op.N)
	C.emu_joint_attention(C.uint(l.Grid), C.uint(l.Block), C.int(op.N), C.int(op.Lm), C.int(op.Lt), C.int(op.D), C.int(op.Dv),
		fp(q), C.int(ld.Q), fp(km), C.int(ld.KMem), fp(vm), C.int(ld.VMem), fp(kt), C.int(ld.KText), fp(vt), C.int(ld.VText),
		fp(out), C.int(ld.Out), C.int(b2i(op.Causal)), C.float(1/math.Sqrt(float64(op.D))), fp(scratch))
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// LowRankProject launches the fused lowrank.cu, with an L × (De+R)
// scratch.
func (e *Backend) LowRankProject(op engine.LowRankOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	m, err1 := e.f32(op.M, 0)
	g, err2 := e.f32(op.Gamma, 0)
	be, err3 := e.f32(op.Beta, 0)
	a, err4 := e.f32(op.A, 0)
	bm, err5 := e.f32(op.B, 0)
	out, err6 := e.out32(op.Out, 0)
	if err := firstErr(err1, err2, err3, err4, err5, err6); err != nil {
		return err
	}
	if op.L == 0 {
		return nil
	}
	scratch := make([]float32, op.L*(op.De+op.R))
	l := cuda.Rows(op.L)
	C.emu_low_rank(C.uint(l.Grid), C.uint(l.Block), C.int(op.L), C.int(op.De), C.int(op.R), C.int(op.Dkv), fp(m), fp(g), fp(be),
		fp(a), fp(bm), C.float(op.Eps), fp(out), fp(scratch))
	return nil
}

// RMSNorm launches rmsnorm.cu.
func (e *Backend) RMSNorm(op engine.RMSNormOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	x, err1 := e.f32(op.X, 0)
	g, err2 := e.f32(op.Gamma, 0)
	out, err3 := e.out32(op.Out, 0)
	if err := firstErr(err1, err2, err3); err != nil {
		return err
	}
	l := cuda.Rows(op.Rows)
	C.emu_rms_norm(C.uint(l.Grid), C.uint(l.Block), C.int(op.Rows), C.int(op.Cols), fp(x), fp(g), C.float(op.Eps), fp(out))
	return nil
}

// RoPE launches rope.cu.
func (e *Backend) RoPE(op engine.RoPEOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	x, err := e.out32(op.X, op.Off)
	if err != nil {
		return err
	}
	ld := op.RowStride()
	l := cuda.Elementwise(op.Rows * op.Heads * op.HeadDim / 2)
	C.emu_rope(C.uint(l.Grid), C.uint(l.Block), C.int(op.Rows), C.int(op.Heads), C.int(op.HeadDim), C.int(ld), C.int(op.Pos0), fp(op.InvFreq), fp(x))
	return nil
}

// SwiGLU launches swiglu.cu.
func (e *Backend) SwiGLU(op engine.SwiGLUOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	x, err1 := e.f32(op.X, 0)
	out, err2 := e.out32(op.Out, 0)
	if err := firstErr(err1, err2); err != nil {
		return err
	}
	l := cuda.Elementwise(op.Rows * op.Cols)
	C.emu_swiglu(C.uint(l.Grid), C.uint(l.Block), C.int(op.Rows), C.int(op.Cols), fp(x), fp(out))
	return nil
}

// EdgeAttention launches edgeattn.cu after checking shapes, sources and
// feature rows on the host.
func (e *Backend) EdgeAttention(op engine.EdgeAttentionOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	ptr, err1 := e.i64(op.Ptr)
	src, err2 := e.i32(op.Src)
	k, err3 := e.f32(op.K, 0)
	q, err4 := e.f32(op.Q, 0)
	v, err5 := e.f32(op.V, 0)
	ef, err6 := e.f32(op.E, 0)
	out, err7 := e.out32(op.Out, 0)
	erow, err8 := e.optI32(op.ERow)
	if err := firstErr(err1, err2, err3, err4, err5, err6, err7, err8); err != nil {
		return err
	}
	if err := op.CheckEdges(ptr, src, erow); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	if op.N == 0 {
		return nil
	}
	l := cuda.Rows(op.N)
	C.emu_edge_attention(C.uint(l.Grid), C.uint(l.Block), C.int(op.N), C.int(op.Heads), C.int(op.HeadDim),
		lp(ptr), ip(src), ip(erow), fp(k), fp(q), fp(v), fp(ef), fp(out))
	return nil
}

// Smooth launches the fused smooth.cu (GRanker). The subgraph is checked
// on the host first (engine.PropagationMatrix: CSR structure, positive
// degrees where there are neighbours).
func (e *Backend) Smooth(op engine.SmoothOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	h, err1 := e.f32(op.H, 0)
	out, err2 := e.out32(op.Out, 0)
	if err := firstErr(err1, err2); err != nil {
		return err
	}
	if op.M == 0 || op.D == 0 {
		return nil
	}
	l := cuda.Rows(op.M)
	C.emu_smooth(C.uint(l.Grid), C.uint(l.Block), C.int(op.M), C.int(op.D), lp(op.AdjPtr),
		ip(op.AdjIdx), fp(op.Deg), fp(h), C.float(op.Alpha), cbool(op.KeepIsolated), fp(out))
	return nil
}

// SpMM launches spmm.cu after checking the CSR structure on the host.
func (e *Backend) SpMM(op engine.SpMMOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	ptr, err1 := e.i64(op.Ptr)
	idx, err2 := e.i32(op.Idx)
	val, err3 := e.f32(op.Val, 0)
	x, err4 := e.f32(op.X, 0)
	y, err5 := e.out32(op.Y, 0)
	if err := firstErr(err1, err2, err3, err4, err5); err != nil {
		return err
	}
	if err := op.CheckCSR(ptr, idx); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	l := cuda.Rows(op.Rows)
	C.emu_spmm(C.uint(l.Grid), C.uint(l.Block), C.int(op.Rows), C.int(op.D), lp(ptr),
		ip(idx), fp(val), fp(x), fp(y))
	return nil
}

// Gemm launches gemm.cu (with its bias/activation epilogue).
func (e *Backend) Gemm(op engine.GemmOp) error { return e.BatchedGemm(op, 1, 0, 0, 0) }

// BatchedGemm launches gemm.cu over batch matrices (z dimension).
func (e *Backend) BatchedGemm(op engine.GemmOp, batch, strideA, strideB, strideC int) error {
	if err := engine.CheckBatch(op, batch, strideA, strideB, strideC); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	a, err1 := e.f32(op.A, op.OffA)
	bm, err2 := e.f32(op.B, op.OffB)
	c, err3 := e.out32(op.C, op.OffC)
	bias, err4 := e.f32(op.Bias, 0)
	if err := firstErr(err1, err2, err3, err4); err != nil {
		return err
	}
	lda, ldb, ldc := op.LeadingDims()
	if op.M == 0 || op.N == 0 {
		return nil
	}
	l := cuda.Gemm(op.M, op.N, batch)
	C.emu_gemm(C.uint(l.GridX), C.uint(l.GridY), C.uint(l.GridZ), C.uint(l.Block), cbool(op.TransA), cbool(op.TransB),
		C.int(op.M), C.int(op.N), C.int(op.K), C.float(op.Alpha), fp(a), C.int(lda), C.longlong(strideA), fp(bm), C.int(ldb),
		C.longlong(strideB), C.float(op.Beta), fp(c), C.int(ldc), C.longlong(strideC), fp(bias), C.int(op.Act))
	return nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// Attention launches attention.cu after checking shapes and lengths.
func (e *Backend) Attention(op engine.AttentionOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	q, err1 := e.f32(op.Q, 0)
	k, err2 := e.f32(op.K, 0)
	v, err3 := e.f32(op.V, 0)
	out, err4 := e.out32(op.Out, 0)
	lengths, err5 := e.i32(op.Lengths)
	if err := firstErr(err1, err2, err3, err4, err5); err != nil {
		return err
	}
	if err := op.CheckLengths(lengths); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	if n := op.Batch * op.Heads * op.Seq; n > 0 {
		l := cuda.Rows(n)
		C.emu_attention(C.uint(l.Grid), C.uint(l.Block), C.int(op.Batch), C.int(op.Seq), C.int(op.Heads), C.int(op.HeadDim),
			fp(q), fp(k), fp(v), ip(lengths), fp(out))
	}
	return nil
}

// TopK launches topk.cu.
func (e *Backend) TopK(op engine.TopKOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	s, err1 := e.f32(op.Scores, 0)
	idx, err2 := e.outI32(op.OutIdx)
	sc, err3 := e.out32(op.OutScore, 0)
	if err := firstErr(err1, err2, err3); err != nil {
		return err
	}
	if op.Rows == 0 || op.K == 0 {
		return nil
	}
	l := cuda.Rows(op.Rows)
	C.emu_topk(C.uint(l.Grid), C.uint(l.Block), C.int(op.Rows), C.int(op.Cols), C.int(op.K), fp(s),
		ip(idx), fp(sc))
	return nil
}

// FlatIP is a GEMM (Q·Xᵀ) into scratch scores, then the top-k kernel.
func (e *Backend) FlatIP(op engine.FlatIPOp) error { return engine.FlatIPByGemm(e, op) }

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// Mul launches mul.cu.
func (e *Backend) Mul(op engine.MulOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	x, err1 := e.f32(op.X, 0)
	y, err2 := e.f32(op.Y, 0)
	out, err3 := e.out32(op.Out, 0)
	if err := firstErr(err1, err2, err3); err != nil {
		return err
	}
	l := cuda.Elementwise(op.N)
	C.emu_mul(C.uint(l.Grid), C.uint(l.Block), C.int(op.N), fp(x), fp(y), cbool(op.Accumulate), fp(out))
	return nil
}

// CopyRows launches copyrows.cu after checking every index on the host.
func (e *Backend) CopyRows(op engine.CopyRowsOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	x, err1 := e.f32(op.X, 0)
	out, err2 := e.out32(op.Out, 0)
	src, err3 := e.optI32(op.Src)
	dst, err4 := e.optI32(op.Dst)
	if err := firstErr(err1, err2, err3, err4); err != nil {
		return err
	}
	if err := op.CheckIndices(src, dst); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	if op.N == 0 {
		return nil
	}
	l := cuda.Rows(op.N)
	C.emu_copy_rows(C.uint(l.Grid), C.uint(l.Block), C.int(op.N), C.int(op.Cols), fp(x), ip(src), ip(dst), cbool(op.Add), fp(out))
	return nil
}

// EdgeMessage launches edgemsg.cu after checking the edges on the host.
func (e *Backend) EdgeMessage(op engine.EdgeMessageOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	ptr, err1 := e.i64(op.Ptr)
	src, err2 := e.i32(op.Src)
	erow, err3 := e.i32(op.ERow)
	m, err4 := e.f32(op.M, 0)
	f, err5 := e.f32(op.F, 0)
	out, err6 := e.out32(op.Out, 0)
	if err := firstErr(err1, err2, err3, err4, err5, err6); err != nil {
		return err
	}
	if err := op.CheckEdges(ptr, src, erow); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	if op.N == 0 {
		return nil
	}
	l := cuda.Rows(op.N)
	C.emu_edge_message(C.uint(l.Grid), C.uint(l.Block), C.int(op.N), C.int(op.D), C.int(op.Rows), lp(ptr), ip(src), ip(erow), fp(m), fp(f), fp(out))
	return nil
}

// optI32 is i32 for an optional index buffer: nil stays nil.
func (e *Backend) optI32(x engine.Buffer) ([]int32, error) {
	if x == nil {
		return nil, nil
	}
	return e.i32(x)
}

func ip(s []int32) *C.int {
	if len(s) == 0 {
		return nil
	}
	return (*C.int)(unsafe.Pointer(&s[0]))
}

func lp(s []int64) *C.longlong {
	if len(s) == 0 {
		return nil
	}
	return (*C.longlong)(unsafe.Pointer(&s[0]))
}

// RoundBF16 runs bf16.cu (the cuda backend's bfloat16 GEMM inputs) on the
// host: x rounded to bfloat16 bits.
func RoundBF16(x []float32) []uint16 {
	y := make([]uint16, len(x))
	if len(x) == 0 {
		return y
	}
	l := cuda.Elementwise(len(x))
	C.emu_f32_to_bf16(C.uint(l.Grid), C.uint(l.Block), C.longlong(len(x)), fp(x), (*C.ushort)(unsafe.Pointer(&y[0])))
	return y
}
