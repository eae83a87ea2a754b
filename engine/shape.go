package engine

import (
	"errors"
	"fmt"
	"math"
)

// Every op's shape rule lives here, once: the op's Check says whether its
// dimensions make sense and every buffer holds what they ask for (of the
// right element type, from its offset), and every backend calls it before
// any work, so the cpu kernels, cuda and its emulation refuse the same ops
// with the same words. Rules that read an index buffer's contents (CSR
// pointers, sources, feature rows, lengths) are the ops' Check… methods
// that take those contents as host slices (check.go has the shared ones).

// ErrShape marks an op whose dimensions or buffers do not fit; every
// backend's refusal of such an op wraps it.
var ErrShape = errors.New("shape")

// shapeError is an op's refusal.
func shapeError(op, format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", op, ErrShape, fmt.Sprintf(format, args...))
}

// mul is the product of non-negative ints, or −1 when one is negative or
// the product overflows (no buffer holds it: the length checks fail).
func mul(xs ...int) int {
	p := 1
	for _, x := range xs {
		if x < 0 || (x > 0 && p > math.MaxInt/x) {
			return -1
		}
		p *= x
	}
	return p
}

// add is a + b for offsets, or −1 on overflow or a negative one.
func add(a, b int) int {
	if a < 0 || b < 0 || a > math.MaxInt-b {
		return -1
	}
	return a + b
}

// span is the elements a rows × cols matrix with row stride ld covers
// ((rows−1)·ld + cols; 0 when empty), or −1 on overflow.
func span(rows, cols, ld int) int {
	if rows == 0 || cols == 0 {
		return 0
	}
	r := mul(rows-1, ld)
	if r < 0 || cols < 0 || r > math.MaxInt-cols {
		return -1
	}
	return r + cols
}

// shapes collects an op's first shape error.
type shapes struct {
	op  string
	err error
}

func newShapes(op string) *shapes { return &shapes{op: op} }

// dims records a violated dimension rule.
func (s *shapes) dims(ok bool, format string, args ...any) {
	if !ok && s.err == nil {
		s.err = shapeError(s.op, format, args...)
	}
}

// need checks that b holds n elements of dt from element off.
func (s *shapes) need(name string, b Buffer, dt DType, off, n int) {
	if s.err != nil {
		return
	}
	switch {
	case b == nil:
		s.err = shapeError(s.op, "%s is missing", name)
	case b.DType() != dt:
		s.err = shapeError(s.op, "%s holds %v, want %v", name, b.DType(), dt)
	case off < 0 || n < 0 || off > b.Len() || b.Len()-off < n:
		s.err = shapeError(s.op, "%s holds %d elements, the shape needs %s from offset %d", name, b.Len(), count(n), off)
	}
}

// opt is need for a buffer that may be nil.
func (s *shapes) opt(name string, b Buffer, dt DType, off, n int) {
	if b != nil {
		s.need(name, b, dt, off, n)
	}
}

func count(n int) string {
	if n < 0 {
		return "more than an int holds"
	}
	return fmt.Sprint(n)
}

// ld is a leading dimension: v, or cols when v is 0 (packed).
func ld(v, cols int) int {
	if v == 0 {
		return cols
	}
	return v
}

// LeadingDims returns the op's leading dimensions, packed ones filled in.
func (op GemmOp) LeadingDims() (lda, ldb, ldc int) {
	_, ac, _, bc := op.operands()
	return max(ld(op.LDA, ac), 1), max(ld(op.LDB, bc), 1), max(ld(op.LDC, op.N), 1)
}

// operands are op(A)'s and op(B)'s stored shapes.
func (op GemmOp) operands() (ar, ac, br, bc int) {
	ar, ac = op.M, op.K
	if op.TransA {
		ar, ac = op.K, op.M
	}
	br, bc = op.K, op.N
	if op.TransB {
		br, bc = op.N, op.K
	}
	return
}

// Check is the GEMM's shape rule for one product.
func (op GemmOp) Check() error { return op.checkAt(0, 0, 0) }

// checkAt checks the product whose A, B and C start sa, sb and sc
// elements after the op's offsets (a batch's last matrix).
func (op GemmOp) checkAt(sa, sb, sc int) error {
	s := newShapes("gemm")
	s.dims(op.M >= 0 && op.N >= 0 && op.K >= 0, "negative shape %d×%d×%d", op.M, op.N, op.K)
	s.dims(op.LDA >= 0 && op.LDB >= 0 && op.LDC >= 0, "negative leading dimensions %d, %d, %d", op.LDA, op.LDB, op.LDC)
	s.dims(op.Precision <= PrecisionBF16, "unknown precision %d", op.Precision)
	if s.err != nil {
		return s.err
	}
	ar, ac, br, bc := op.operands()
	lda, ldb, ldc := op.LeadingDims()
	s.dims(lda >= max(ac, 1) && ldb >= max(bc, 1) && ldc >= max(op.N, 1), "leading dimensions %d, %d, %d too small", lda, ldb, ldc)
	s.need("A", op.A, F32, add(op.OffA, sa), span(ar, ac, lda))
	s.need("B", op.B, F32, add(op.OffB, sb), span(br, bc, ldb))
	s.need("C", op.C, F32, add(op.OffC, sc), span(op.M, op.N, ldc))
	s.opt("Bias", op.Bias, F32, 0, op.N)
	return s.err
}

// Check is BiasAct's shape rule.
func (op BiasActOp) Check() error {
	s := newShapes("bias_act")
	l := ld(op.LD, op.Cols)
	s.dims(op.Rows >= 0 && op.Cols >= 0 && l >= op.Cols, "bad shape %d×%d with leading dimension %d", op.Rows, op.Cols, l)
	s.need("X", op.X, F32, op.Off, span(op.Rows, op.Cols, l))
	s.opt("Bias", op.Bias, F32, 0, op.Cols)
	return s.err
}

// rowsShape checks a Rows × Cols row op: x and out of Rows·Cols values,
// per-column parameters of Cols.
func rowsShape(op string, rows, cols int, x, out Buffer, params map[string]Buffer) error {
	s := newShapes(op)
	s.dims(rows >= 0 && cols > 0, "bad shape %d×%d", rows, cols)
	n := mul(rows, cols)
	s.need("X", x, F32, 0, n)
	s.need("Out", out, F32, 0, n)
	for _, name := range []string{"Gamma", "Beta"} {
		if p, ok := params[name]; ok {
			s.need(name, p, F32, 0, cols)
		}
	}
	return s.err
}

// Check is LayerNorm's shape rule.
func (op LayerNormOp) Check() error {
	return rowsShape("layernorm", op.Rows, op.Cols, op.X, op.Out, map[string]Buffer{"Gamma": op.Gamma, "Beta": op.Beta})
}

// Check is RMSNorm's shape rule.
func (op RMSNormOp) Check() error {
	return rowsShape("rmsnorm", op.Rows, op.Cols, op.X, op.Out, map[string]Buffer{"Gamma": op.Gamma})
}

// elementwise checks an op over n elements of its buffers.
func elementwise(op string, n int, bufs map[string]Buffer) error {
	s := newShapes(op)
	s.dims(n >= 0, "negative length %d", n)
	for _, name := range []string{"X", "Y", "Out"} {
		if b, ok := bufs[name]; ok {
			s.need(name, b, F32, 0, n)
		}
	}
	return s.err
}

// Check is Activate's shape rule.
func (op ActivateOp) Check() error {
	return elementwise("activate", op.N, map[string]Buffer{"X": op.X, "Out": op.Out})
}

// Check is Axpby's shape rule.
func (op AxpbyOp) Check() error {
	return elementwise("axpby", op.N, map[string]Buffer{"X": op.X, "Y": op.Y, "Out": op.Out})
}

// Check is Mul's shape rule.
func (op MulOp) Check() error {
	return elementwise("mul", op.N, map[string]Buffer{"X": op.X, "Y": op.Y, "Out": op.Out})
}

// Check is Softmax's shape rule.
func (op SoftmaxOp) Check() error {
	s := newShapes("softmax")
	s.dims(op.Rows >= 0 && op.Cols >= 0, "bad shape %d×%d", op.Rows, op.Cols)
	n := mul(op.Rows, op.Cols)
	s.need("X", op.X, F32, 0, n)
	s.need("Out", op.Out, F32, 0, n)
	s.opt("Mask", op.Mask, F32, 0, n)
	return s.err
}

// Check is SwiGLU's shape rule.
func (op SwiGLUOp) Check() error {
	s := newShapes("swiglu")
	s.dims(op.Rows >= 0 && op.Cols > 0, "bad shape %d×%d", op.Rows, op.Cols)
	s.need("X", op.X, F32, 0, mul(2, op.Rows, op.Cols))
	s.need("Out", op.Out, F32, 0, mul(op.Rows, op.Cols))
	return s.err
}

// Check is Attention's shape rule; CheckLengths checks the lengths.
func (op AttentionOp) Check() error {
	s := newShapes("attention")
	s.dims(op.Batch >= 0 && op.Seq >= 0 && op.Heads > 0 && op.HeadDim > 0, "bad shape %d×%d×%d×%d", op.Batch, op.Seq, op.Heads, op.HeadDim)
	n := mul(op.Batch, op.Seq, op.Heads, op.HeadDim)
	for _, b := range []struct {
		name string
		buf  Buffer
	}{{"Q", op.Q}, {"K", op.K}, {"V", op.V}, {"Out", op.Out}} {
		s.need(b.name, b.buf, F32, 0, n)
	}
	s.need("Lengths", op.Lengths, I32, 0, op.Batch)
	return s.err
}

// CheckLengths checks the Batch sequence lengths (Lengths' first values):
// each in [0, Seq].
func (op AttentionOp) CheckLengths(lengths []int32) error {
	for b, l := range lengths[:op.Batch] {
		if l < 0 || int(l) > op.Seq {
			return shapeError("attention", "length %d of sequence %d outside [0,%d]", l, b, op.Seq)
		}
	}
	return nil
}

// Check is SpMM's shape rule; CheckCSR checks the matrix.
func (op SpMMOp) Check() error {
	s := newShapes("spmm")
	s.dims(op.Rows >= 0 && op.Cols >= 0 && op.D >= 0, "bad shape %d×%d, D=%d", op.Rows, op.Cols, op.D)
	s.need("Ptr", op.Ptr, I64, 0, op.Rows+1)
	s.dims(op.Ptr == nil || op.Ptr.Len() == op.Rows+1, "Ptr holds %d pointers, want %d", lenOf(op.Ptr), op.Rows+1)
	s.need("X", op.X, F32, 0, mul(op.Cols, op.D))
	s.need("Y", op.Y, F32, 0, mul(op.Rows, op.D))
	s.dims(op.Idx != nil && op.Idx.DType() == I32, "Idx must be an I32 buffer")
	s.dims(op.Val == nil || op.Val.DType() == F32, "Val must be an F32 buffer")
	return s.err
}

// CheckCSR checks the matrix's pointers and the first nnz column indices
// (host copies): a valid CSR of Rows × Cols, its Idx and Val long enough.
func (op SpMMOp) CheckCSR(ptr []int64, idx []int32) error {
	a := CSRMatrix{Rows: op.Rows, Cols: op.Cols, Ptr: ptr, Idx: idx}
	if err := a.Check(); err != nil {
		return fmt.Errorf("spmm: %w: %v", ErrShape, err)
	}
	s := newShapes("spmm")
	nnz := int(ptr[op.Rows])
	s.need("Idx", op.Idx, I32, 0, nnz)
	s.opt("Val", op.Val, F32, 0, nnz)
	return s.err
}

func lenOf(b Buffer) int {
	if b == nil {
		return 0
	}
	return b.Len()
}

// edgeShape checks a destination-grouped edge list's static parts: N+1
// pointers and an I32 source buffer.
func edgeShape(s *shapes, n int, ptr, src Buffer) {
	s.dims(n >= 0, "negative node count %d", n)
	s.need("Ptr", ptr, I64, 0, n+1)
	s.dims(ptr == nil || ptr.Len() == n+1, "Ptr holds %d pointers, want %d", lenOf(ptr), n+1)
	s.dims(src != nil && src.DType() == I32, "Src must be an I32 buffer")
}

// Check is EdgeAttention's shape rule; CheckEdges checks the edges.
func (op EdgeAttentionOp) Check() error {
	s := newShapes("edge attention")
	s.dims(op.Heads > 0 && op.HeadDim > 0 && op.HeadDim <= math.MaxInt32/op.Heads, "bad width %d heads × %d", op.Heads, op.HeadDim)
	edgeShape(s, op.N, op.Ptr, op.Src)
	if s.err != nil {
		return s.err
	}
	n := mul(op.N, op.Heads, op.HeadDim)
	for _, b := range []struct {
		name string
		buf  Buffer
	}{{"K", op.K}, {"Q", op.Q}, {"V", op.V}, {"Out", op.Out}} {
		s.need(b.name, b.buf, F32, 0, n)
	}
	s.need("E", op.E, F32, 0, 0)
	s.opt("ERow", op.ERow, I32, 0, 0)
	return s.err
}

// CheckEdges checks the edges (host copies of the pointers, and of the
// first nnz sources and feature rows; erow nil without ERow): valid
// sources, and feature rows inside E.
func (op EdgeAttentionOp) CheckEdges(ptr []int64, src, erow []int32) error {
	nnz, err := CheckEdges("edge attention", op.N, ptr, src)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrShape, err)
	}
	d := op.Heads * op.HeadDim
	if op.ERow == nil {
		s := newShapes("edge attention")
		s.need("E", op.E, F32, 0, mul(nnz, d))
		return s.err
	}
	if err := CheckFeatureRows("edge attention", erow, nnz, op.E.Len()/d, false); err != nil {
		return fmt.Errorf("%w: %v", ErrShape, err)
	}
	return nil
}

// Check is EdgeMessage's shape rule; CheckEdges checks the edges.
func (op EdgeMessageOp) Check() error {
	s := newShapes("edge message")
	s.dims(op.D > 0 && op.Rows >= 0, "bad shape D=%d, %d feature rows", op.D, op.Rows)
	edgeShape(s, op.N, op.Ptr, op.Src)
	s.need("ERow", op.ERow, I32, 0, 0)
	s.need("M", op.M, F32, 0, mul(op.N, op.D))
	s.need("F", op.F, F32, 0, mul(op.Rows, op.D))
	s.need("Out", op.Out, F32, 0, mul(op.N, op.D))
	return s.err
}

// CheckEdges checks the edges (host copies): valid sources, and feature
// rows ≥ 0 (rows past the table carry nothing).
func (op EdgeMessageOp) CheckEdges(ptr []int64, src, erow []int32) error {
	nnz, err := CheckEdges("edge message", op.N, ptr, src)
	if err == nil {
		err = CheckFeatureRows("edge message", erow, nnz, op.Rows, true)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrShape, err)
	}
	return nil
}

// Check is TopK's shape rule.
func (op TopKOp) Check() error {
	s := newShapes("topk")
	s.dims(op.Rows >= 0 && op.Cols >= 0 && op.K >= 0, "bad shape %d×%d, K=%d", op.Rows, op.Cols, op.K)
	s.need("Scores", op.Scores, F32, 0, mul(op.Rows, op.Cols))
	s.need("OutIdx", op.OutIdx, I32, 0, mul(op.Rows, op.K))
	s.need("OutScore", op.OutScore, F32, 0, mul(op.Rows, op.K))
	return s.err
}

// Check is FlatIP's shape rule.
func (op FlatIPOp) Check() error {
	s := newShapes("flatip")
	s.dims(op.N >= 0 && op.D > 0 && op.B >= 0 && op.K >= 0, "bad shape N=%d D=%d B=%d K=%d", op.N, op.D, op.B, op.K)
	s.need("X", op.X, F32, 0, mul(op.N, op.D))
	s.need("Q", op.Q, F32, 0, mul(op.B, op.D))
	s.need("OutIdx", op.OutIdx, I32, 0, mul(op.B, op.K))
	s.need("OutScore", op.OutScore, F32, 0, mul(op.B, op.K))
	return s.err
}

// Check is ScoreRows' shape rule.
func (op ScoreRowsOp) Check() error {
	s := newShapes("scorerows")
	s.dims(op.N >= 0 && op.D > 0, "bad shape N=%d D=%d", op.N, op.D)
	s.need("X", op.X, F32, 0, mul(op.N, op.D))
	s.need("Q", op.Q, F32, 0, op.D)
	s.need("Out", op.Out, F32, 0, op.N)
	return s.err
}

// Check is Smooth's shape rule, the host subgraph's included (a CSR of M
// nodes, positive degrees where there are neighbours).
func (op SmoothOp) Check() error {
	s := newShapes("smooth")
	s.dims(op.M >= 0 && op.D >= 0, "bad shape M=%d D=%d", op.M, op.D)
	if s.err != nil {
		return s.err
	}
	adj := CSRMatrix{Rows: op.M, Cols: op.M, Ptr: op.AdjPtr, Idx: op.AdjIdx}
	if _, err := PropagationMatrix(adj, op.Deg, op.KeepIsolated); err != nil {
		return fmt.Errorf("smooth: %w: %v", ErrShape, err)
	}
	s.need("H", op.H, F32, 0, mul(op.M, op.D))
	s.need("Out", op.Out, F32, 0, mul(op.M, op.D))
	return s.err
}

// Check is LowRankProject's shape rule.
func (op LowRankOp) Check() error {
	s := newShapes("low-rank projection")
	s.dims(op.L >= 0 && op.De > 0 && op.R > 0 && op.Dkv > 0, "bad shape L=%d De=%d R=%d Dkv=%d", op.L, op.De, op.R, op.Dkv)
	s.need("M", op.M, F32, 0, mul(op.L, op.De))
	s.need("Gamma", op.Gamma, F32, 0, op.De)
	s.need("Beta", op.Beta, F32, 0, op.De)
	s.need("A", op.A, F32, 0, mul(op.De, op.R))
	s.need("B", op.B, F32, 0, mul(op.R, op.Dkv))
	s.need("Out", op.Out, F32, 0, mul(op.L, op.Dkv))
	return s.err
}

// JointLDs are a joint attention's row strides, packed ones filled in.
type JointLDs struct{ Q, KMem, VMem, KText, VText, Out int }

// LeadingDims returns the op's row strides, packed ones filled in.
func (op JointAttentionOp) LeadingDims() JointLDs {
	return JointLDs{ld(op.LDQ, op.D), ld(op.LDKMem, op.D), ld(op.LDVMem, op.Dv), ld(op.LDKText, op.D), ld(op.LDVText, op.Dv), ld(op.LDOut, op.Dv)}
}

// Check is JointAttention's shape rule.
func (op JointAttentionOp) Check() error {
	s := newShapes("joint attention")
	s.dims(op.N >= 0 && op.Lm >= 0 && op.Lt >= 0 && op.D > 0 && op.Dv > 0 && op.Lm <= math.MaxInt-op.Lt && op.Lm+op.Lt > 0 && (!op.Causal || op.Lt >= op.N),
		"bad shape N=%d Lm=%d Lt=%d D=%d Dv=%d causal=%v", op.N, op.Lm, op.Lt, op.D, op.Dv, op.Causal)
	if s.err != nil {
		return s.err
	}
	l := op.LeadingDims()
	s.dims(l.Q >= op.D && l.KMem >= op.D && l.KText >= op.D && l.VMem >= op.Dv && l.VText >= op.Dv && l.Out >= op.Dv, "a row stride is below its row length")
	s.need("Q", op.Q, F32, op.OffQ, span(op.N, op.D, l.Q))
	s.need("KMem", op.KMem, F32, op.OffKMem, span(op.Lm, op.D, l.KMem))
	s.need("VMem", op.VMem, F32, op.OffVMem, span(op.Lm, op.Dv, l.VMem))
	s.need("KText", op.KText, F32, op.OffKText, span(op.Lt, op.D, l.KText))
	s.need("VText", op.VText, F32, op.OffVText, span(op.Lt, op.Dv, l.VText))
	s.need("Out", op.Out, F32, op.OffOut, span(op.N, op.Dv, l.Out))
	return s.err
}

// RowStride is RoPE's row stride, packed (Heads·HeadDim) filled in.
func (op RoPEOp) RowStride() int { return ld(op.LD, op.Heads*op.HeadDim) }

// Check is RoPE's shape rule.
func (op RoPEOp) Check() error {
	s := newShapes("rope")
	s.dims(op.Rows >= 0 && op.Heads > 0 && op.HeadDim > 0 && op.HeadDim%2 == 0 && op.Pos0 >= 0 && op.Pos0 <= math.MaxInt32-op.Rows,
		"bad shape rows=%d heads=%d head_dim=%d (even) pos0=%d", op.Rows, op.Heads, op.HeadDim, op.Pos0)
	if s.err != nil {
		return s.err
	}
	s.dims(op.LD >= 0 && op.RowStride() >= mul(op.Heads, op.HeadDim) && mul(op.Heads, op.HeadDim) > 0, "row stride %d below heads×head_dim", op.RowStride())
	s.dims(len(op.InvFreq) >= op.HeadDim/2, "%d inverse frequencies for head_dim %d", len(op.InvFreq), op.HeadDim)
	s.need("X", op.X, F32, op.Off, span(op.Rows, mul(op.Heads, op.HeadDim), op.RowStride()))
	return s.err
}

// Check is GAT's shape rule, the host adjacency's pointers included.
func (op GATOp) Check() error {
	s := newShapes("gat")
	s.dims(op.N >= 0 && op.D > 0 && len(op.AdjPtr) == op.N+1, "bad shapes N=%d D=%d with %d pointers", op.N, op.D, len(op.AdjPtr))
	if s.err != nil {
		return s.err
	}
	adj := CSRMatrix{Rows: op.N, Cols: op.N, Ptr: op.AdjPtr, Idx: op.AdjIdx}
	if err := adj.Check(); err != nil {
		return fmt.Errorf("gat: %w: %v", ErrShape, err)
	}
	s.need("H", op.H, F32, 0, mul(op.N, op.D))
	s.need("S", op.S, F32, 0, mul(2, op.N))
	s.need("Out", op.Out, F32, 0, mul(op.N, op.D))
	s.dims(op.Out != op.H || op.N == 0, "Out aliases H")
	return s.err
}

// Check is CopyRows's static shape rule; CheckIndices checks the moves.
func (op CopyRowsOp) Check() error {
	s := newShapes("copy rows")
	s.dims(op.N >= 0 && op.Cols > 0, "bad shape N=%d Cols=%d", op.N, op.Cols)
	s.need("X", op.X, F32, 0, 0)
	s.need("Out", op.Out, F32, 0, 0)
	s.dims(op.X != op.Out, "Out is X (rows must move between buffers)")
	s.opt("Src", op.Src, I32, 0, op.N)
	s.opt("Dst", op.Dst, I32, 0, op.N)
	return s.err
}

// CheckIndices checks the moves (host copies of Src's and Dst's first N
// values, nil for the identity) against the rows X and Out hold.
func (op CopyRowsOp) CheckIndices(src, dst []int32) error {
	if err := CheckCopyRows(op.N, op.Cols, src, dst, op.X.Len()/op.Cols, op.Out.Len()/op.Cols); err != nil {
		return fmt.Errorf("%w: %v", ErrShape, err)
	}
	return nil
}
