//go:build cuda

package cuda

import (
	"errors"
	"fmt"

	"github.com/gleaner-rag/gleaner/engine"
)

// Mul launches mul.cu.
func (b *Backend) Mul(op engine.MulOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	x, _, err1 := arg(op.X, engine.F32, 0)
	y, _, err2 := arg(op.Y, engine.F32, 0)
	out, _, err3 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	return b.launch("mul", rows(Elementwise(op.N)), op.N, x, y, op.Accumulate, out)
}

// CopyRows launches copyrows.cu after downloading and checking its indices
// (N values each) on the host.
func (b *Backend) CopyRows(op engine.CopyRowsOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	x, _, err1 := arg(op.X, engine.F32, 0)
	out, _, err2 := outArg(op.Out, engine.F32, 0)
	src, _, err3 := arg(op.Src, engine.I32, 0)
	dst, _, err4 := arg(op.Dst, engine.I32, 0)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return err
	}
	hs, err := b.optIndices(op.Src, op.N)
	if err != nil {
		return err
	}
	hd, err := b.optIndices(op.Dst, op.N)
	if err != nil {
		return err
	}
	if err := op.CheckIndices(hs, hd); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	if op.N == 0 {
		return nil
	}
	return b.launch("copyrows", rows(Rows(op.N)), op.N, op.Cols, x, src, dst, op.Add, out)
}

// optIndices downloads n indices of an optional buffer (nil stays nil).
func (b *Backend) optIndices(x engine.Buffer, n int) ([]int32, error) {
	if x == nil {
		return nil, nil
	}
	return hostCopy[int32](b, x, n)
}

// EdgeMessage launches edgemsg.cu after checking the edges on the host.
func (b *Backend) EdgeMessage(op engine.EdgeMessageOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	ptr, _, err1 := arg(op.Ptr, engine.I64, 0)
	src, _, err2 := arg(op.Src, engine.I32, 0)
	erow, _, err3 := arg(op.ERow, engine.I32, 0)
	m, _, err4 := arg(op.M, engine.F32, 0)
	f, _, err5 := arg(op.F, engine.F32, 0)
	out, _, err6 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return err
	}
	hp, hs, hr, err := b.edges(op.N, op.Ptr, op.Src, op.ERow)
	if err != nil {
		return err
	}
	if err := op.CheckEdges(hp, hs, hr); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	if op.N == 0 {
		return nil
	}
	return b.launch("edgemsg", rows(Rows(op.N)), op.N, op.D, op.Rows, ptr, src, erow, m, f, out)
}
