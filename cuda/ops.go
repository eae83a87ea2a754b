//go:build cuda

package cuda

import (
	"errors"
	"fmt"

	"github.com/gleaner-rag/gleaner/engine"
)

// Every op runs its engine Check (the one shape rule every backend shares)
// and the host checks of index contents its mirror allows, as cuda-emu
// does, then launches its kernel (the same launches, from launch.go).

// maxGridYZ is the GPU's limit on a grid's y and z dimensions (the host
// emulation has none, so the ops check it).
const maxGridYZ = 65535

// Axpby launches axpby.cu.
func (b *Backend) Axpby(op engine.AxpbyOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	x, _, err1 := arg(op.X, engine.F32, 0)
	y, _, err2 := arg(op.Y, engine.F32, 0)
	out, _, err3 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	return b.launch("axpby", rows(Elementwise(op.N)), op.N, op.Alpha, x, op.Beta, y, out)
}

// Activate launches activate.cu.
func (b *Backend) Activate(op engine.ActivateOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	x, _, err1 := arg(op.X, engine.F32, 0)
	out, _, err2 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	return b.launch("activate", rows(Elementwise(op.N)), int(op.Act), op.N, x, out)
}

// BiasAct launches biasact.cu.
func (b *Backend) BiasAct(op engine.BiasActOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	x, _, err1 := outArg(op.X, engine.F32, op.Off)
	bias, _, err2 := arg(op.Bias, engine.F32, 0)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	ld := op.LD
	if ld == 0 {
		ld = op.Cols
	}
	return b.launch("biasact", rows(Rows(op.Rows)), op.Rows, op.Cols, ld, bias, int(op.Act), x)
}

// Softmax launches softmax.cu.
func (b *Backend) Softmax(op engine.SoftmaxOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	x, _, err1 := arg(op.X, engine.F32, 0)
	m, _, err2 := arg(op.Mask, engine.F32, 0)
	out, _, err3 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	return b.launch("softmax", rows(Rows(op.Rows)), op.Rows, op.Cols, x, m, out)
}

// LayerNorm launches layernorm.cu.
func (b *Backend) LayerNorm(op engine.LayerNormOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	x, _, err1 := arg(op.X, engine.F32, 0)
	g, _, err2 := arg(op.Gamma, engine.F32, 0)
	be, _, err3 := arg(op.Beta, engine.F32, 0)
	out, _, err4 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return err
	}
	return b.launch("layernorm", rows(Rows(op.Rows)), op.Rows, op.Cols, x, g, be, op.Eps, out)
}

// EdgeAttention launches edgeattn.cu after the host checks of the
// pointers, sources and feature rows (from their mirrors, or downloaded).
func (b *Backend) EdgeAttention(op engine.EdgeAttentionOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	ptr, _, err1 := arg(op.Ptr, engine.I64, 0)
	src, _, err2 := arg(op.Src, engine.I32, 0)
	k, _, err3 := arg(op.K, engine.F32, 0)
	q, _, err4 := arg(op.Q, engine.F32, 0)
	v, _, err5 := arg(op.V, engine.F32, 0)
	e, _, err6 := arg(op.E, engine.F32, 0)
	out, _, err7 := outArg(op.Out, engine.F32, 0)
	erow, _, err8 := arg(op.ERow, engine.I32, 0)
	if err := errors.Join(err1, err2, err3, err4, err5, err6, err7, err8); err != nil {
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
	return b.launch("edgeattn", rows(Rows(op.N)), op.N, op.Heads, op.HeadDim, ptr, src, erow, k, q, v, e, out)
}

// edges copies an edge list's n+1 pointers, and its sources and feature
// rows (none without erowBuf) up to the edge count the pointers give, for
// the ops' host checks (which refuse a count the buffers do not hold).
func (b *Backend) edges(n int, ptrBuf, srcBuf, erowBuf engine.Buffer) (ptr []int64, src, erow []int32, err error) {
	if ptr, err = hostCopy[int64](b, ptrBuf, n+1); err != nil {
		return nil, nil, nil, err
	}
	nnz := max(int(ptr[n]), 0)
	if src, err = hostCopy[int32](b, srcBuf, min(nnz, srcBuf.Len())); err != nil || erowBuf == nil {
		return ptr, src, nil, err
	}
	erow, err = hostCopy[int32](b, erowBuf, min(nnz, erowBuf.Len()))
	return ptr, src, erow, err
}

// Smooth launches the fused smooth.cu (GRanker), uploading the host-side
// subgraph first (engine.PropagationMatrix checks it).
func (b *Backend) Smooth(op engine.SmoothOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	h, _, err1 := arg(op.H, engine.F32, 0)
	out, _, err2 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if op.M == 0 || op.D == 0 {
		return nil
	}
	var bufs []engine.Buffer
	defer func() {
		for _, x := range bufs {
			b.Free(x)
		}
	}()
	var ptrs [3]devArg
	for i, src := range []any{op.AdjPtr, op.AdjIdx, op.Deg} {
		x, err := b.Bind(src)
		if err != nil {
			return err
		}
		bufs = append(bufs, x)
		ptrs[i] = devArg(x.(*buffer).ptr)
	}
	return b.launch("smooth", rows(Rows(op.M)), op.M, op.D, ptrs[0], ptrs[1], ptrs[2], h, op.Alpha, op.KeepIsolated, out)
}

// SpMM launches spmm.cu after checking the CSR structure on the host.
func (b *Backend) SpMM(op engine.SpMMOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	ptrA, np, err1 := arg(op.Ptr, engine.I64, 0)
	idxA, ni, err2 := arg(op.Idx, engine.I32, 0)
	val, _, err3 := arg(op.Val, engine.F32, 0)
	x, _, err4 := arg(op.X, engine.F32, 0)
	y, _, err5 := outArg(op.Y, engine.F32, 0)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return err
	}
	ptr, err := hostCopy[int64](b, op.Ptr, np)
	if err != nil {
		return err
	}
	idx, err := hostCopy[int32](b, op.Idx, min(max(int(ptr[op.Rows]), 0), ni))
	if err != nil {
		return err
	}
	if err := op.CheckCSR(ptr, idx); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	return b.launch("spmm", rows(Rows(op.Rows)), op.Rows, op.D, ptrA, idxA, val, x, y)
}

// Gemm launches gemm.cu (with its bias/activation epilogue).
func (b *Backend) Gemm(op engine.GemmOp) error { return b.BatchedGemm(op, 1, 0, 0, 0) }

// BatchedGemm runs batch matrices through cuBLAS when the backend has it
// (SGEMM, strided-batched SGEMM, or GemmEx for TF32 and bfloat16 inputs;
// the epilogue by biasact.cu), else through gemm.cu (z dimension), the
// emulation-tested kernel, which fuses the epilogue and computes float32
// whatever op.Precision allows.
func (b *Backend) BatchedGemm(op engine.GemmOp, batch, strideA, strideB, strideC int) error {
	if err := engine.CheckBatch(op, batch, strideA, strideB, strideC); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	a, _, err1 := arg(op.A, engine.F32, op.OffA)
	bm, _, err2 := arg(op.B, engine.F32, op.OffB)
	c, _, err3 := outArg(op.C, engine.F32, op.OffC)
	bias, _, err4 := arg(op.Bias, engine.F32, 0)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return err
	}
	if op.M == 0 || op.N == 0 {
		return nil
	}
	lda, ldb, ldc := op.LeadingDims()
	if b.useBLAS(op, batch, lda, ldb, ldc) && b.streamHasBLAS() { // else gemm.cu
		return b.gemmCuBLAS(op, lda, ldb, ldc, a, bm, c, bias, batch, strideA, strideB, strideC)
	}
	l := Gemm(op.M, op.N, batch)
	if l.GridY > maxGridYZ || l.GridZ > maxGridYZ {
		return fmt.Errorf("cuda: gemm: %d rows × batch %d exceed the grid's y/z limit (%d tiles of %d)", op.M, batch, maxGridYZ, GemmTile)
	}
	return b.launch("gemm", grid{l.GridX, l.GridY, l.GridZ, l.Block, l.Block}, op.TransA, op.TransB, op.M, op.N, op.K, op.Alpha,
		a, lda, int64(strideA), bm, ldb, int64(strideB), op.Beta, c, ldc, int64(strideC), bias, int(op.Act))
}

// Attention launches attention.cu after checking shapes and lengths.
func (b *Backend) Attention(op engine.AttentionOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	q, _, err1 := arg(op.Q, engine.F32, 0)
	k, _, err2 := arg(op.K, engine.F32, 0)
	v, _, err3 := arg(op.V, engine.F32, 0)
	out, _, err4 := outArg(op.Out, engine.F32, 0)
	lengthsA, _, err5 := arg(op.Lengths, engine.I32, 0)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return err
	}
	lengths, err := hostCopy[int32](b, op.Lengths, op.Batch)
	if err != nil {
		return err
	}
	if err := op.CheckLengths(lengths); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	n := op.Batch * op.Heads * op.Seq
	if n == 0 {
		return nil
	}
	return b.launch("attention", rows(Rows(n)), op.Batch, op.Seq, op.Heads, op.HeadDim, q, k, v, lengthsA, out)
}

// TopK launches topk.cu.
func (b *Backend) TopK(op engine.TopKOp) error {
	if err := op.Check(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	s, _, err1 := arg(op.Scores, engine.F32, 0)
	idx, _, err2 := outArg(op.OutIdx, engine.I32, 0)
	sc, _, err3 := outArg(op.OutScore, engine.F32, 0)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	if op.Rows == 0 || op.K == 0 {
		return nil
	}
	return b.launch("topk", rows(Rows(op.Rows)), op.Rows, op.Cols, op.K, s, idx, sc)
}

// FlatIP is a GEMM (Q·Xᵀ) into scratch scores, then the top-k kernel.
func (b *Backend) FlatIP(op engine.FlatIPOp) error { return engine.FlatIPByGemm(b, op) }
