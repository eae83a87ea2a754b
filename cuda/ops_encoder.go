//go:build cuda

package cuda

import (
	"errors"
	"fmt"

	"github.com/gleaner-rag/gleaner/engine"
)

// Mul launches mul.cu.
func (b *Backend) Mul(op engine.MulOp) error {
	x, nx, err1 := arg(op.X, engine.F32, 0)
	y, ny, err2 := arg(op.Y, engine.F32, 0)
	out, no, err3 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	if op.N < 0 || nx < op.N || ny < op.N || no < op.N {
		return shapeErr("mul")
	}
	return b.launch("mul", rows(Elementwise(op.N)), op.N, x, y, op.Accumulate, out)
}

// CopyRows launches copyrows.cu after downloading and checking its indices
// (N values each) on the host.
func (b *Backend) CopyRows(op engine.CopyRowsOp) error {
	x, nx, err1 := arg(op.X, engine.F32, 0)
	out, no, err2 := outArg(op.Out, engine.F32, 0)
	src, ns, err3 := arg(op.Src, engine.I32, 0)
	dst, nd, err4 := arg(op.Dst, engine.I32, 0)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return err
	}
	if op.X != nil && op.X == op.Out {
		return fmt.Errorf("cuda: copy rows: Out is X (rows must move between buffers)")
	}
	if op.N < 0 || op.Cols <= 0 || (op.Src != nil && ns < op.N) || (op.Dst != nil && nd < op.N) {
		return shapeErr("copy rows")
	}
	hs, err := b.optIndices(op.Src, op.N)
	if err != nil {
		return err
	}
	hd, err := b.optIndices(op.Dst, op.N)
	if err != nil {
		return err
	}
	if err := engine.CheckCopyRows(op.N, op.Cols, hs, hd, nx/op.Cols, no/op.Cols); err != nil {
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
	ptr, np, err1 := arg(op.Ptr, engine.I64, 0)
	src, ns, err2 := arg(op.Src, engine.I32, 0)
	erow, nr, err3 := arg(op.ERow, engine.I32, 0)
	m, nm, err4 := arg(op.M, engine.F32, 0)
	f, nf, err5 := arg(op.F, engine.F32, 0)
	out, no, err6 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return err
	}
	if op.D <= 0 || op.Rows < 0 || op.ERow == nil || nm < op.N*op.D || nf < op.Rows*op.D || no < op.N*op.D {
		return shapeErr("edge message")
	}
	nnz, err := b.checkEdges("edge message", op.N, op.Ptr, np, op.Src, ns)
	if err != nil {
		return err
	}
	if err := b.checkRows("edge message", op.ERow, nr, nnz, op.Rows, true); err != nil {
		return err
	}
	if op.N == 0 {
		return nil
	}
	return b.launch("edgemsg", rows(Rows(op.N)), op.N, op.D, op.Rows, ptr, src, erow, m, f, out)
}
