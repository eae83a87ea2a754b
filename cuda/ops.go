//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"math"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/kernels"
)

// The ops check shapes on the host as the cuda-emu backend does (the same
// launches, from launch.go), then launch their kernel.

func shapeErr(op string) error { return fmt.Errorf("cuda: %s: buffers too short for the shape", op) }

// maxGridYZ is the GPU's limit on a grid's y and z dimensions (the host
// emulation has none, so the ops check it).
const maxGridYZ = 65535

// Axpby launches axpby.cu.
func (b *Backend) Axpby(op engine.AxpbyOp) error {
	x, nx, err1 := arg(op.X, engine.F32, 0)
	y, ny, err2 := arg(op.Y, engine.F32, 0)
	out, no, err3 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	if op.N < 0 || nx < op.N || ny < op.N || no < op.N {
		return shapeErr("axpby")
	}
	return b.launch("axpby", rows(Elementwise(op.N)), op.N, op.Alpha, x, op.Beta, y, out)
}

// Activate launches activate.cu.
func (b *Backend) Activate(op engine.ActivateOp) error {
	x, nx, err1 := arg(op.X, engine.F32, 0)
	out, no, err2 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if op.N < 0 || nx < op.N || no < op.N {
		return shapeErr("activate")
	}
	return b.launch("activate", rows(Elementwise(op.N)), int(op.Act), op.N, x, out)
}

// BiasAct launches biasact.cu.
func (b *Backend) BiasAct(op engine.BiasActOp) error {
	x, nx, err1 := outArg(op.X, engine.F32, op.Off)
	bias, nb, err2 := arg(op.Bias, engine.F32, 0)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	ld := op.LD
	if ld == 0 {
		ld = op.Cols
	}
	if op.Rows < 0 || op.Cols < 0 || ld < op.Cols || (op.Rows > 0 && nx < (op.Rows-1)*ld+op.Cols) || (op.Bias != nil && nb < op.Cols) {
		return shapeErr("bias_act")
	}
	return b.launch("biasact", rows(Rows(op.Rows)), op.Rows, op.Cols, ld, bias, int(op.Act), x)
}

// Softmax launches softmax.cu.
func (b *Backend) Softmax(op engine.SoftmaxOp) error {
	x, nx, err1 := arg(op.X, engine.F32, 0)
	m, nm, err2 := arg(op.Mask, engine.F32, 0)
	out, no, err3 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	n := op.Rows * op.Cols
	if op.Rows < 0 || op.Cols < 0 || nx < n || no < n || (op.Mask != nil && nm < n) {
		return shapeErr("softmax")
	}
	return b.launch("softmax", rows(Rows(op.Rows)), op.Rows, op.Cols, x, m, out)
}

// LayerNorm launches layernorm.cu.
func (b *Backend) LayerNorm(op engine.LayerNormOp) error {
	x, nx, err1 := arg(op.X, engine.F32, 0)
	g, ng, err2 := arg(op.Gamma, engine.F32, 0)
	be, nb, err3 := arg(op.Beta, engine.F32, 0)
	out, no, err4 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return err
	}
	if n := op.Rows * op.Cols; op.Rows < 0 || op.Cols <= 0 || nx < n || no < n || ng < op.Cols || nb < op.Cols {
		return shapeErr("layernorm")
	}
	return b.launch("layernorm", rows(Rows(op.Rows)), op.Rows, op.Cols, x, g, be, op.Eps, out)
}

// EdgeAttention launches edgeattn.cu after checking the pointers, sources
// and feature rows on the host (a download of N+1 pointers and the edges'
// indices).
func (b *Backend) EdgeAttention(op engine.EdgeAttentionOp) error {
	ptr, np, err1 := arg(op.Ptr, engine.I64, 0)
	src, ns, err2 := arg(op.Src, engine.I32, 0)
	k, nk, err3 := arg(op.K, engine.F32, 0)
	q, nq, err4 := arg(op.Q, engine.F32, 0)
	v, nv, err5 := arg(op.V, engine.F32, 0)
	e, ne, err6 := arg(op.E, engine.F32, 0)
	out, no, err7 := outArg(op.Out, engine.F32, 0)
	erow, nr, err8 := arg(op.ERow, engine.I32, 0)
	if err := errors.Join(err1, err2, err3, err4, err5, err6, err7, err8); err != nil {
		return err
	}
	d := op.Heads * op.HeadDim
	if op.Heads <= 0 || op.HeadDim <= 0 || op.HeadDim > math.MaxInt32/op.Heads { // the kernel's d is an int
		return shapeErr("edge attention")
	}
	nnz, err := b.checkEdges("edge attention", op.N, op.Ptr, np, op.Src, ns)
	if err != nil {
		return err
	}
	if nk < op.N*d || nq < op.N*d || nv < op.N*d || no < op.N*d || (op.ERow == nil && ne < nnz*d) {
		return shapeErr("edge attention")
	}
	if op.ERow != nil {
		if err := b.checkRows("edge attention", op.ERow, nr, nnz, ne/d, false); err != nil {
			return err
		}
	}
	if op.N == 0 {
		return nil
	}
	return b.launch("edgeattn", rows(Rows(op.N)), op.N, op.Heads, op.HeadDim, ptr, src, erow, k, q, v, e, out)
}

// checkEdges downloads a destination-grouped edge list's pointers and
// sources (np and ns elements held) and checks them as every backend does.
func (b *Backend) checkEdges(what string, n int, ptrBuf engine.Buffer, np int, srcBuf engine.Buffer, ns int) (int, error) {
	if n < 0 || np != n+1 {
		return 0, shapeErr(what)
	}
	ptr, err := hostCopy[int64](b, ptrBuf, n+1)
	if err != nil {
		return 0, err
	}
	if nnz := int(ptr[n]); nnz < 0 || nnz > ns {
		return 0, shapeErr(what)
	}
	src, err := hostCopy[int32](b, srcBuf, int(ptr[n]))
	if err != nil {
		return 0, err
	}
	return engine.CheckEdges("cuda: "+what, n, ptr, src)
}

// checkRows downloads nnz feature rows (nr held) and checks them against
// a table of rows rows (engine.CheckFeatureRows).
func (b *Backend) checkRows(what string, buf engine.Buffer, nr, nnz, rows int, beyond bool) error {
	if nr < nnz {
		return shapeErr(what)
	}
	erow, err := hostCopy[int32](b, buf, nnz)
	if err != nil {
		return err
	}
	return engine.CheckFeatureRows("cuda: "+what, erow, nnz, rows, beyond)
}

// Smooth launches the fused smooth.cu (GRanker), uploading the host-side
// subgraph first (engine.PropagationMatrix checks it).
func (b *Backend) Smooth(op engine.SmoothOp) error {
	h, nh, err1 := arg(op.H, engine.F32, 0)
	out, no, err2 := outArg(op.Out, engine.F32, 0)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	adj := engine.CSRMatrix{Rows: op.M, Cols: op.M, Ptr: op.AdjPtr, Idx: op.AdjIdx}
	if _, err := engine.PropagationMatrix(adj, op.Deg, op.KeepIsolated); err != nil {
		return err
	}
	if op.D < 0 || nh < op.M*op.D || no < op.M*op.D {
		return shapeErr("smooth")
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
	ptrA, np, err1 := arg(op.Ptr, engine.I64, 0)
	idxA, ni, err2 := arg(op.Idx, engine.I32, 0)
	val, nv, err3 := arg(op.Val, engine.F32, 0)
	x, nx, err4 := arg(op.X, engine.F32, 0)
	y, ny, err5 := outArg(op.Y, engine.F32, 0)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return err
	}
	if op.Rows < 0 || np != op.Rows+1 {
		return shapeErr("spmm")
	}
	ptr, err := hostCopy[int64](b, op.Ptr, np)
	if err != nil {
		return err
	}
	nnz := int(ptr[op.Rows])
	if nnz < 0 || ni < nnz || (op.Val != nil && nv < nnz) {
		return shapeErr("spmm")
	}
	idx, err := hostCopy[int32](b, op.Idx, nnz)
	if err != nil {
		return err
	}
	a := engine.CSRMatrix{Rows: op.Rows, Cols: op.Cols, Ptr: ptr, Idx: idx}
	if err := a.Check(); err != nil {
		return err
	}
	if op.D < 0 || nx < op.Cols*op.D || ny < op.Rows*op.D {
		return shapeErr("spmm")
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
	a, na, err1 := arg(op.A, engine.F32, op.OffA)
	bm, nb, err2 := arg(op.B, engine.F32, op.OffB)
	c, nc, err3 := outArg(op.C, engine.F32, op.OffC)
	bias, nbias, err4 := arg(op.Bias, engine.F32, 0)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return err
	}
	if err := engine.CheckBatch(op, batch, strideA, strideB, strideC); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	if op.Bias == nil {
		nbias = -1
	}
	// The shapes of the first and the last matrix of the batch, by length
	// (CheckLens also fills the packed leading dimensions).
	g := kernels.GemmArgs{TransA: op.TransA, TransB: op.TransB, M: op.M, N: op.N, K: op.K, LDA: op.LDA, LDB: op.LDB, LDC: op.LDC}
	last := g
	if err := errors.Join(g.CheckLens(na, nb, nc, nbias),
		last.CheckLens(na-min((batch-1)*strideA, na), nb-min((batch-1)*strideB, nb), nc-min((batch-1)*strideC, nc), nbias)); err != nil {
		return err
	}
	if op.M == 0 || op.N == 0 {
		return nil
	}
	if b.useBLAS(op, batch, g.LDA, g.LDB, g.LDC) && b.streamHasBLAS() { // else gemm.cu
		return b.gemmCuBLAS(op, g.LDA, g.LDB, g.LDC, a, bm, c, bias, batch, strideA, strideB, strideC)
	}
	l := Gemm(op.M, op.N, batch)
	if l.GridY > maxGridYZ || l.GridZ > maxGridYZ {
		return fmt.Errorf("cuda: gemm: %d rows × batch %d exceed the grid's y/z limit (%d tiles of %d)", op.M, batch, maxGridYZ, GemmTile)
	}
	return b.launch("gemm", grid{l.GridX, l.GridY, l.GridZ, l.Block, l.Block}, op.TransA, op.TransB, op.M, op.N, op.K, op.Alpha,
		a, g.LDA, int64(strideA), bm, g.LDB, int64(strideB), op.Beta, c, g.LDC, int64(strideC), bias, int(op.Act))
}

// Attention launches attention.cu after checking shapes and lengths.
func (b *Backend) Attention(op engine.AttentionOp) error {
	q, nq, err1 := arg(op.Q, engine.F32, 0)
	k, nk, err2 := arg(op.K, engine.F32, 0)
	v, nv, err3 := arg(op.V, engine.F32, 0)
	out, no, err4 := outArg(op.Out, engine.F32, 0)
	lengthsA, nl, err5 := arg(op.Lengths, engine.I32, 0)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return err
	}
	if op.Batch < 0 || op.Seq < 0 || op.Heads <= 0 || op.HeadDim <= 0 {
		return fmt.Errorf("cuda: attention: bad shape %d×%d×%d×%d", op.Batch, op.Seq, op.Heads, op.HeadDim)
	}
	if m := op.Batch * op.Seq * op.Heads * op.HeadDim; nq < m || nk < m || nv < m || no < m || nl < op.Batch {
		return shapeErr("attention")
	}
	lengths, err := hostCopy[int32](b, op.Lengths, op.Batch)
	if err != nil {
		return err
	}
	for i, l := range lengths {
		if l < 0 || int(l) > op.Seq {
			return fmt.Errorf("cuda: attention: length %d of sequence %d outside [0,%d]", l, i, op.Seq)
		}
	}
	n := op.Batch * op.Heads * op.Seq
	if n == 0 {
		return nil
	}
	return b.launch("attention", rows(Rows(n)), op.Batch, op.Seq, op.Heads, op.HeadDim, q, k, v, lengthsA, out)
}

// TopK launches topk.cu.
func (b *Backend) TopK(op engine.TopKOp) error {
	s, ns, err1 := arg(op.Scores, engine.F32, 0)
	idx, ni, err2 := outArg(op.OutIdx, engine.I32, 0)
	sc, nsc, err3 := outArg(op.OutScore, engine.F32, 0)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	if op.Rows < 0 || op.Cols < 0 || op.K < 0 || ns < op.Rows*op.Cols || ni < op.Rows*op.K || nsc < op.Rows*op.K {
		return shapeErr("topk")
	}
	if op.Rows == 0 || op.K == 0 {
		return nil
	}
	return b.launch("topk", rows(Rows(op.Rows)), op.Rows, op.Cols, op.K, s, idx, sc)
}

// FlatIP is a GEMM (Q·Xᵀ) into scratch scores, then the top-k kernel.
func (b *Backend) FlatIP(op engine.FlatIPOp) error { return engine.FlatIPByGemm(b, op) }
