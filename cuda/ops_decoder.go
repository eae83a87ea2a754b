//go:build cuda

package cuda

import (
	"errors"

	"github.com/gleaner-rag/gleaner/engine"
)

// RMSNorm launches rmsnorm.cu.
func (b *Backend) RMSNorm(op engine.RMSNormOp) error {
	x, nx, err1 := arg(op.X, engine.F32, 0)
	g, ng, err2 := arg(op.Gamma, engine.F32, 0)
	out, no, err3 := arg(op.Out, engine.F32, 0)
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
	x, nx, err := arg(op.X, engine.F32, op.Off)
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
	out, no, err2 := arg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if op.Rows < 0 || op.Cols <= 0 || nx < 2*op.Rows*op.Cols || no < op.Rows*op.Cols {
		return shapeErr("swiglu")
	}
	return b.launch("swiglu", rows(Elementwise(op.Rows*op.Cols)), op.Rows, op.Cols, x, out)
}
