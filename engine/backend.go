package engine

import (
	"context"
	"errors"
	"fmt"
)

// DType is a buffer's element type.
type DType uint8

// Element types.
const (
	F32 DType = iota + 1
	I32
	I64
)

func (d DType) String() string {
	switch d {
	case F32:
		return "f32"
	case I32:
		return "i32"
	case I64:
		return "i64"
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Buffer is memory owned by one backend (host memory for cpu, device
// memory for cuda). Ops accept only buffers of their own backend.
type Buffer interface {
	DType() DType
	Len() int
	Backend() string
}

// Caps describes a backend.
type Caps struct {
	Device string // e.g. "cpu: AVX2/FMA, openblas", "cuda: NVIDIA H200"
}

// ErrNotImplemented is the one signal for an optional op a backend does not
// provide: a fused op (Smooth, LowRankProject, JointAttention, GAT), a
// decoder or encoder op, or a Gemm epilogue (Bias, Act). The engine's
// functions (GemmFused, Smooth, LowRankProject, JointAttention, GAT)
// swallow only this error and fall back to composed core ops; the models
// refuse a backend without their decoder or encoder ops; kerneltest skips
// and lists such ops. A backend returns it before doing any work. Embed
// Unfused to start a backend without them.
var ErrNotImplemented = errors.New("engine: op not implemented by this backend")

// ErrReadOnly is the error of an Upload into a bound buffer (Memory.Bind)
// or of an op whose output is one.
var ErrReadOnly = errors.New("engine: the buffer is read-only (made by Bind)")

// Memory is a backend's buffer management. Upload and Download take
// []float32, []int32 or []int64 matching the buffer's DType; off is in
// elements.
type Memory interface {
	Alloc(dt DType, n int) (Buffer, error)
	Free(b Buffer)
	Upload(dst Buffer, off int, src any) error
	Download(dst any, src Buffer, off int) error
	// Bind returns a read-only buffer holding src ([]float32, []int32 or
	// []int64): a host backend may alias src (no copy, so a memory-mapped
	// index matrix is not duplicated), a device backend uploads it (and
	// may keep what it derives from it, such as a bfloat16 copy of a
	// weight). src must not change while the buffer is in use. Upload into
	// it, or an op writing it, fails with ErrReadOnly.
	Bind(src any) (Buffer, error)
	// Sync waits for all work submitted through this backend, or through
	// this queue view only for a view (engine.Queuer); a no-op for
	// synchronous backends.
	Sync(ctx context.Context) error
}

// Ops is the op set every backend implements. Each op is documented by its
// reference loop in package kernels and checked by kernels/kerneltest.
type Ops interface {
	Gemm(op GemmOp) error
	// BatchedGemm runs batch GEMMs whose A, B and C start strideA, strideB
	// and strideC elements apart (0 shares A or B; outputs must not
	// overlap: CheckBatch).
	BatchedGemm(op GemmOp, batch, strideA, strideB, strideC int) error
	BiasAct(op BiasActOp) error
	LayerNorm(op LayerNormOp) error
	Activate(op ActivateOp) error
	Softmax(op SoftmaxOp) error
	Attention(op AttentionOp) error
	SpMM(op SpMMOp) error
	Axpby(op AxpbyOp) error
	EdgeAttention(op EdgeAttentionOp) error
	TopK(op TopKOp) error
	FlatIP(op FlatIPOp) error
}

// Backend is one compute device. Backends are safe for concurrent use.
type Backend interface {
	Name() string
	Caps() Caps
	Memory
	Ops
	Fused
	DecoderOps
	EncoderOps
}

// EncoderOps are the gather, gate and message ops of SeedER's graph
// encoder (models/seeder). They are optional like DecoderOps: a backend
// without one returns ErrNotImplemented and the encoder refuses that
// backend with a clear error.
type EncoderOps interface {
	Mul(op MulOp) error
	CopyRows(op CopyRowsOp) error
	EdgeMessage(op EdgeMessageOp) error
}

// DecoderOps are the elementwise ops of a Llama-family decoder (the GEMMs
// and attention are core ops). They are optional: a backend without one
// returns ErrNotImplemented (Unfused does), kerneltest skips and lists it,
// and models/llama refuses to run on that backend with a clear error.
type DecoderOps interface {
	RMSNorm(op RMSNormOp) error
	RoPE(op RoPEOp) error
	SwiGLU(op SwiGLUOp) error
}

// Fused are the optional fused ops; a backend without one returns
// ErrNotImplemented from it (see Unfused).
type Fused interface {
	Smooth(op SmoothOp) error                 // GRanker's smoothing in one call
	LowRankProject(op LowRankOp) error        // (LN(M)·A)·B in one call
	JointAttention(op JointAttentionOp) error // FuseRAG's joint attention in one call
	GAT(op GATOp) error                       // one graph-attention head (FuseRAG's fusion)
}

// Unfused implements Fused, DecoderOps and EncoderOps with ErrNotImplemented
// everywhere: embed it in a backend that has none of those ops yet.
type Unfused struct{}

func (Unfused) Smooth(SmoothOp) error                 { return ErrNotImplemented }
func (Unfused) LowRankProject(LowRankOp) error        { return ErrNotImplemented }
func (Unfused) JointAttention(JointAttentionOp) error { return ErrNotImplemented }
func (Unfused) GAT(GATOp) error                       { return ErrNotImplemented }
func (Unfused) RMSNorm(RMSNormOp) error               { return ErrNotImplemented }
func (Unfused) RoPE(RoPEOp) error                     { return ErrNotImplemented }
func (Unfused) SwiGLU(SwiGLUOp) error                 { return ErrNotImplemented }
func (Unfused) Mul(MulOp) error                       { return ErrNotImplemented }
func (Unfused) CopyRows(CopyRowsOp) error             { return ErrNotImplemented }
func (Unfused) EdgeMessage(EdgeMessageOp) error       { return ErrNotImplemented }
