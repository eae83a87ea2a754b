//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"math"

	"github.com/gleaner-rag/gleaner/engine"
)

// RMSNorm launches rmsnorm.cu.
func (b *Backend) RMSNorm(op engine.RMSNormOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	x, _, err1 := arg(op.X, engine.F32, 0)
	g, _, err2 := arg(op.Gamma, engine.F32, 0)
	out, _, err3 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	return b.launch("rmsnorm", rows(Rows(op.Rows)), op.Rows, op.Cols, x, g, op.Eps, out)
}

// RoPE launches rope.cu, uploading the inverse frequencies (head_dim/2
// values) first.
func (b *Backend) RoPE(op engine.RoPEOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	x, _, err := outArg(op.X, engine.F32, op.Off)
	if err != nil {
		return err
	}
	ld := op.RowStride()
	if op.Rows == 0 {
		return nil
	}
	inv, err := b.Bind(op.InvFreq[:op.HeadDim/2])
	if err != nil {
		return err
	}
	defer b.Free(inv)
	return b.launch("rope", rows(Elementwise(op.Rows*op.Heads*op.HeadDim/2)), op.Rows, op.Heads, op.HeadDim, ld, op.Pos0,
		devArg(inv.(*buffer).ptr), x)
}

// SwiGLU launches swiglu.cu.
func (b *Backend) SwiGLU(op engine.SwiGLUOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	x, _, err1 := arg(op.X, engine.F32, 0)
	out, _, err2 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	return b.launch("swiglu", rows(Elementwise(op.Rows*op.Cols)), op.Rows, op.Cols, x, out)
}

// JointAttention launches the fused jointattn.cu with a pooled N × (Lm+Lt)
// scratch for the scores.
func (b *Backend) JointAttention(op engine.JointAttentionOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	q, _, err1 := arg(op.Q, engine.F32, op.OffQ)
	km, _, err2 := arg(op.KMem, engine.F32, op.OffKMem)
	vm, _, err3 := arg(op.VMem, engine.F32, op.OffVMem)
	kt, _, err4 := arg(op.KText, engine.F32, op.OffKText)
	vt, _, err5 := arg(op.VText, engine.F32, op.OffVText)
	out, _, err6 := outArg(op.Out, engine.F32, op.OffOut)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return err
	}
	ld := op.LeadingDims()
	if op.N == 0 {
		return nil
	}
	scratch, err := b.Alloc(engine.F32, op.N*(op.Lm+op.Lt))
	if err != nil {
		return err
	}
	defer b.Free(scratch)
	return b.launch("jointattn", rows(Rows(op.N)), op.N, op.Lm, op.Lt, op.D, op.Dv, q, ld.Q, km, ld.KMem, vm, ld.VMem,
		kt, ld.KText, vt, ld.VText, out, ld.Out, op.Causal, float32(1/math.Sqrt(float64(op.D))), devArg(scratch.(*buffer).ptr))
}

// LowRankProject launches the fused lowrank.cu with a pooled L × (De+R)
// scratch.
func (b *Backend) LowRankProject(op engine.LowRankOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	m, _, err1 := arg(op.M, engine.F32, 0)
	g, _, err2 := arg(op.Gamma, engine.F32, 0)
	be, _, err3 := arg(op.Beta, engine.F32, 0)
	a, _, err4 := arg(op.A, engine.F32, 0)
	bm, _, err5 := arg(op.B, engine.F32, 0)
	out, _, err6 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return err
	}
	if op.L == 0 {
		return nil
	}
	scratch, err := b.Alloc(engine.F32, op.L*(op.De+op.R))
	if err != nil {
		return err
	}
	defer b.Free(scratch)
	return b.launch("lowrank", rows(Rows(op.L)), op.L, op.De, op.R, op.Dkv, m, g, be, a, bm, op.Eps, out, devArg(scratch.(*buffer).ptr))
}
