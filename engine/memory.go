package engine

import "fmt"

// Element is a type a buffer can hold.
type Element interface{ float32 | int32 | int64 }

func dtypeOf[T Element]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return F32
	case int32:
		return I32
	}
	return I64
}

// Upload allocates a buffer on b and copies src into it.
func Upload[T Element](b Backend, src []T) (Buffer, error) {
	buf, err := b.Alloc(dtypeOf[T](), len(src))
	if err != nil {
		return nil, err
	}
	if err := b.Upload(buf, 0, src); err != nil {
		b.Free(buf)
		return nil, err
	}
	return buf, nil
}

// Download copies a whole buffer back to host memory.
func Download[T Element](b Backend, buf Buffer) ([]T, error) {
	if buf.DType() != dtypeOf[T]() {
		return nil, fmt.Errorf("engine: download of a %s buffer as %s", buf.DType(), dtypeOf[T]())
	}
	out := make([]T, buf.Len())
	return out, b.Download(out, buf, 0)
}

// MaxElements bounds one buffer (2⁴⁰ elements): a larger request is an
// error, never a byte count that overflows into a small allocation.
const MaxElements = 1 << 40

// CheckAlloc reports an allocation no backend should attempt: a negative
// or absurd length, or an unknown dtype. Backends call it first in Alloc.
func CheckAlloc(backend string, dt DType, n int) error {
	switch {
	case dt != F32 && dt != I32 && dt != I64:
		return fmt.Errorf("%s: unknown dtype %v", backend, dt)
	case n < 0 || n > MaxElements:
		return fmt.Errorf("%s: alloc of %d elements: want 0 to %d", backend, n, MaxElements)
	}
	return nil
}

// FlatIPByGemm composes FlatIP as a device backend runs it: Q·Xᵀ into
// scratch scores by Gemm, then TopK over them.
func FlatIPByGemm(b Backend, op FlatIPOp) error {
	if op.N < 0 || op.D <= 0 || op.B < 0 || op.K < 0 {
		return fmt.Errorf("%s: flatip: bad shape %d×%d, batch %d, k %d", b.Name(), op.N, op.D, op.B, op.K)
	}
	scores, err := b.Alloc(F32, op.B*op.N)
	if err != nil {
		return err
	}
	defer b.Free(scores)
	if err := b.Gemm(GemmOp{TransB: true, M: op.B, N: op.N, K: op.D, Alpha: 1, A: op.Q, B: op.X, C: scores}); err != nil {
		return err
	}
	return b.TopK(TopKOp{Scores: scores, Rows: op.B, Cols: op.N, K: op.K, OutIdx: op.OutIdx, OutScore: op.OutScore})
}

// MemoryStats are a device backend's allocator counters.
type MemoryStats struct {
	Allocs, Reuses, DriverAllocs int64 // requests, requests served from cached blocks, driver allocations
	InUse, Cached                int64 // bytes handed out, bytes held for reuse
}

// MemoryStater is an optional capability of a backend with a caching
// allocator (cuda): its counters, for metrics. Safe for concurrent use.
type MemoryStater interface {
	MemoryStats() MemoryStats
}

// WeightBinder is an optional extension of Memory. BindWeight is Bind for a
// model's weight matrix, which the backend may also repack for its GEMM,
// keeping that copy (as large as the matrix) with the buffer. Index
// matrices and other data the caller bound to avoid a copy use Bind.
type WeightBinder interface {
	BindWeight(src []float32) (Buffer, error)
}

// BindWeight binds a weight through b's BindWeight where it has one, else
// through Bind.
func BindWeight(b Backend, src []float32) (Buffer, error) {
	if wb, ok := b.(WeightBinder); ok {
		return wb.BindWeight(src)
	}
	return b.Bind(src)
}
