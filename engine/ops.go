package engine

import "fmt"

// GemmOp is C = act(alpha·op(A)·op(B) + beta·C + bias) on row-major
// matrices starting at element offsets OffA, OffB, OffC with leading
// dimensions LDA, LDB, LDC (0 = packed). Bias (N values) may be nil.
// Precision lets a backend round the products' inputs (the zero value is
// float32 throughout).
type GemmOp struct {
	Precision      Precision
	TransA, TransB bool
	M, N, K        int
	Alpha, Beta    float32
	A, B, C        Buffer
	OffA, OffB     int
	OffC           int
	LDA, LDB, LDC  int
	Bias           Buffer
	Act            Activation
}

// Precision is the arithmetic a Gemm may use for its products: float32
// (the zero value), or inputs rounded to TF32 (10 mantissa bits) or
// bfloat16 (7 bits) for tensor cores, always accumulating in float32. It
// is a permission, not a demand: a backend without the faster path
// computes in float32, which is always within the stated bound.
type Precision uint8

// Precisions.
const (
	PrecisionF32 Precision = iota
	PrecisionTF32
	PrecisionBF16
)

// UnitRoundoff is the relative rounding error of one input at p: 2⁻²⁴ for
// float32, 2⁻¹¹ for TF32, 2⁻⁸ for bfloat16. A product of two rounded
// inputs errs by at most (2u + u²)·|a·b| before the float32 sum.
func (p Precision) UnitRoundoff() float64 {
	switch p {
	case PrecisionTF32:
		return 1.0 / (1 << 11)
	case PrecisionBF16:
		return 1.0 / (1 << 8)
	}
	return 1.0 / (1 << 24)
}

func (p Precision) String() string {
	switch p {
	case PrecisionF32:
		return "fp32"
	case PrecisionTF32:
		return "tf32"
	case PrecisionBF16:
		return "bf16"
	}
	return fmt.Sprintf("precision(%d)", uint8(p))
}

// ParsePrecision reads "fp32", "tf32" or "bf16".
func ParsePrecision(s string) (Precision, error) {
	for _, p := range []Precision{PrecisionF32, PrecisionTF32, PrecisionBF16} {
		if s == p.String() {
			return p, nil
		}
	}
	return 0, fmt.Errorf("engine: unknown precision %q (want fp32, tf32 or bf16)", s)
}

// BiasActOp adds Bias (Cols values, may be nil) to every row of X (Rows×Cols
// from element Off, leading dimension LD, 0 = packed) and applies Act in
// place.
type BiasActOp struct {
	X          Buffer
	Off        int
	Rows, Cols int
	LD         int
	Bias       Buffer
	Act        Activation
}

// LayerNormOp normalises Rows rows of Cols values: see kernels.LayerNorm.
type LayerNormOp struct {
	X, Gamma, Beta, Out Buffer
	Rows, Cols          int
	Eps                 float32
}

// ActivateOp is Out[i] = Act(X[i]) for N elements.
type ActivateOp struct {
	Act    Activation
	X, Out Buffer
	N      int
}

// SoftmaxOp normalises Rows rows; Mask (0 = excluded) may be nil.
type SoftmaxOp struct {
	X, Mask, Out Buffer
	Rows, Cols   int
}

// AttentionOp is padded self-attention: see kernels.Attention. Lengths is
// an I32 buffer of Batch values.
type AttentionOp struct {
	Batch, Seq, Heads, HeadDim int
	Q, K, V, Out               Buffer
	Lengths                    Buffer
}

// SpMMOp is Y = A·X with A in CSR (Ptr I64, Idx I32, Val F32 or nil = ones).
type SpMMOp struct {
	Rows, Cols, D int
	Ptr, Idx, Val Buffer
	X, Y          Buffer
}

// AxpbyOp is Out = Alpha·X + Beta·Y over N elements.
type AxpbyOp struct {
	N           int
	Alpha, Beta float32
	X, Y, Out   Buffer
}

// EdgeAttentionOp is Exphormer's sparse attention: see kernels.EdgeAttention.
// ERow (I32, one per edge) may be nil: edge p's features are then row p of
// E; when set, row ERow[p] of a table E (edges of few types share rows).
type EdgeAttentionOp struct {
	N, Heads, HeadDim int
	Ptr, Src          Buffer // I64 (N+1), I32 (edges)
	ERow              Buffer // I32 (edges) or nil
	K, Q, V, E, Out   Buffer
}

// TopKOp selects the K best entries of each of Rows rows of Scores into
// OutIdx (I32, Rows×K) and OutScore (F32, Rows×K), best first, ties by
// lower column; rows with fewer than K finite entries are padded with
// index −1 and score −Inf.
type TopKOp struct {
	Scores           Buffer
	Rows, Cols, K    int
	OutIdx, OutScore Buffer
}

// FlatIPOp is exact dense search (O_vs): for each of B queries (Q, B×D)
// the K rows of X (N×D) with the largest dot products, best first, ties by
// lower row, into OutIdx (I32, B×K) and OutScore (F32, B×K); with fewer
// than K rows the rest is padded with index −1 and score −Inf. K may exceed
// N. Reference loop: score every row in float64, sort, keep K.
type FlatIPOp struct {
	X, Q             Buffer
	N, D, B, K       int
	OutIdx, OutScore Buffer
}

// ScoreRowsOp is every row's dot product with one query: Out[i] =
// Σ_j X[i·D+j]·Q[j] for the N rows of X (N×D), Out holding N values. It is
// the optional RowScorer op; ScoreRows runs it as a one-row Gemm on a
// backend without it. Reference loop: each dot product in float64.
type ScoreRowsOp struct {
	X, Q, Out Buffer
	N, D      int
}

// SmoothOp is GRanker's smoothing over an induced subgraph of M nodes: see
// kernels.SmoothArgs. The subgraph (AdjPtr, AdjIdx, Deg) is small and
// built on the host, so it is passed as host slices; H and Out are device
// buffers of M×D.
type SmoothOp struct {
	M, D         int
	AdjPtr       []int64
	AdjIdx       []int32
	Deg          []float32
	H, Out       Buffer
	Alpha        float32
	KeepIsolated bool
}

// LowRankOp is Out = (LN(M)·A)·B: see kernels.LowRankArgs.
type LowRankOp struct {
	L, De, R, Dkv  int
	M, Gamma, Beta Buffer
	A, B, Out      Buffer
	Eps            float32
}

// JointAttentionOp is one head of FuseRAG's joint attention: see
// kernels.JointAttentionArgs. Each matrix starts at its element offset
// (Off…) with its row stride (LD…; 0 = packed), so one call reads one head
// of a [positions, heads·D] buffer: a decoder's grouped-query heads share
// a KV cache without copies.
type JointAttentionOp struct {
	N, Lm, Lt, D, Dv int
	Q, KMem, VMem    Buffer
	KText, VText     Buffer
	Out              Buffer
	Causal           bool

	OffQ, OffKMem, OffVMem, OffKText, OffVText, OffOut int
	LDQ, LDKMem, LDVMem, LDKText, LDVText, LDOut       int
}

// RMSNormOp is Llama's RMSNorm of Rows rows of Cols values: see
// kernels.RMSNorm. Out may be X.
type RMSNormOp struct {
	X, Gamma, Out Buffer
	Rows, Cols    int
	Eps           float32
}

// RoPEOp applies rotary position embeddings in place: see kernels.RoPEArgs.
// X starts at element Off; InvFreq (HeadDim/2 values) is host data, as it
// is computed once per model.
type RoPEOp struct {
	X                    Buffer
	Off                  int
	Rows, Heads, HeadDim int
	LD, Pos0             int
	InvFreq              []float32
}

// SwiGLUOp is Out = silu(gate)·up over Rows rows of X = [gate | up]
// (2·Cols values each): see kernels.SwiGLU.
type SwiGLUOp struct {
	X, Out     Buffer
	Rows, Cols int
}

// GATOp is one head of a graph attention layer over a small graph built on
// the host (so the adjacency is host slices): see kernels.GATArgs. H (N×D)
// and S (N×2) are device buffers; Out (N×D) must not alias H.
type GATOp struct {
	N, D   int
	AdjPtr []int64
	AdjIdx []int32
	H, S   Buffer
	Out    Buffer
	Slope  float32
}

// MulOp is Out = X⊙Y over N elements, or Out += X⊙Y with Accumulate: see
// kernels.Mul.
type MulOp struct {
	N          int
	X, Y, Out  Buffer
	Accumulate bool
}

// CopyRowsOp moves N rows of Cols values: Out[Dst[i]] = X[Src[i]], or +=
// with Add. Src and Dst (I32, N values) may be nil for the identity; a
// negative Src[i] writes zeros (nothing with Add). Dst entries must be
// distinct, so every output row has one writer, and Out must not be X:
// see kernels.CopyRows.
type CopyRowsOp struct {
	N, Cols  int
	X, Out   Buffer
	Src, Dst Buffer
	Add      bool
}

// EdgeMessageOp is GraphGPS's relation-gated message sum over edges grouped
// by destination: Out_i = Σ_p M[Src[p]]⊙F[ERow[p]] over the edges into i
// whose row ERow[p] < Rows (edges of other types carry no message): see
// kernels.EdgeMessage. M and Out are N×D, F is Rows×D.
type EdgeMessageOp struct {
	N, D, Rows     int
	Ptr, Src, ERow Buffer // I64 (N+1), I32 (edges), I32 (edges)
	M, F, Out      Buffer
}
