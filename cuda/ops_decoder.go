//go:build cuda

package cuda

import (
	"errors"
	"math"

	"github.com/gleaner-rag/gleaner/engine"
)

// RMSNorm launches rmsnorm.cu.
func (b *Backend) RMSNorm(op engine.RMSNormOp) error {
	x, nx, err1 := arg(op.X, engine.F32, 0)
	g, ng, err2 := arg(op.Gamma, engine.F32, 0)
	out, no, err3 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	if n := op.Rows * op.Cols; op.Rows < 0 || op.Cols <= 0 || nx < n || no < n || ng < op.Cols {
		return shapeErr("rmsnorm")
	}
	return b.launch("rmsnorm", rows(Rows(op.Rows)), op.Rows, op.Cols, x, g, op.Eps, out)
}

// RoPE launches rope.cu, uploading the inverse frequencies (head_dim/2
// values) first.
func (b *Backend) RoPE(op engine.RoPEOp) error {
	x, nx, err := outArg(op.X, engine.F32, op.Off)
	if err != nil {
		return err
	}
	ld, err := CheckRoPE(op, nx)
	if err != nil {
		return err
	}
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
	x, nx, err1 := arg(op.X, engine.F32, 0)
	out, no, err2 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if op.Rows < 0 || op.Cols <= 0 || nx < 2*op.Rows*op.Cols || no < op.Rows*op.Cols {
		return shapeErr("swiglu")
	}
	return b.launch("swiglu", rows(Elementwise(op.Rows*op.Cols)), op.Rows, op.Cols, x, out)
}

// JointAttention launches the fused jointattn.cu with a pooled N × (Lm+Lt)
// scratch for the scores.
func (b *Backend) JointAttention(op engine.JointAttentionOp) error {
	q, nq, err1 := arg(op.Q, engine.F32, op.OffQ)
	km, nkm, err2 := arg(op.KMem, engine.F32, op.OffKMem)
	vm, nvm, err3 := arg(op.VMem, engine.F32, op.OffVMem)
	kt, nkt, err4 := arg(op.KText, engine.F32, op.OffKText)
	vt, nvt, err5 := arg(op.VText, engine.F32, op.OffVText)
	out, no, err6 := outArg(op.Out, engine.F32, op.OffOut)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return err
	}
	ld, err := CheckJointAttention(op, nq, nkm, nvm, nkt, nvt, no)
	if err != nil || op.N == 0 {
		return err
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
	m, nm, err1 := arg(op.M, engine.F32, 0)
	g, ng, err2 := arg(op.Gamma, engine.F32, 0)
	be, nb, err3 := arg(op.Beta, engine.F32, 0)
	a, na, err4 := arg(op.A, engine.F32, 0)
	bm, nbm, err5 := arg(op.B, engine.F32, 0)
	out, no, err6 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return err
	}
	if err := CheckLowRank(op, nm, ng, nb, na, nbm, no); err != nil || op.L == 0 {
		return err
	}
	scratch, err := b.Alloc(engine.F32, op.L*(op.De+op.R))
	if err != nil {
		return err
	}
	defer b.Free(scratch)
	return b.launch("lowrank", rows(Rows(op.L)), op.L, op.De, op.R, op.Dkv, m, g, be, a, bm, op.Eps, out, devArg(scratch.(*buffer).ptr))
}
