// Package cpu is gleaner's CPU backend: the engine op set on host memory,
// computed by package kernels (OpenBLAS GEMM when its library is present,
// SIMD dot products, pure-Go elsewhere). Importing it registers the
// backend as "cpu". Ops run synchronously on the calling goroutine (and the
// kernels' own worker goroutines), so Sync is a no-op.
package cpu

import (
	"context"
	"fmt"
	"sync"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/kernels"
)

// Name is the registry name.
const Name = "cpu"

func init() {
	engine.Register(Name, func() (engine.Backend, error) { return New(), nil })
}

// Backend is the CPU backend. It is stateless and safe for concurrent use.
type Backend struct{}

// New returns the CPU backend.
func New() *Backend { return &Backend{} }

// Name implements engine.Backend.
func (*Backend) Name() string { return Name }

// Caps implements engine.Backend. Every fused op and the Gemm epilogue are
// native here.
func (*Backend) Caps() engine.Caps {
	return engine.Caps{Device: fmt.Sprintf("cpu: dot %s, blas %s", kernels.DotBlockImpl(), kernels.BLASImpl())}
}

// DotRows implements engine.RowDotter with kernels.DotRows, the gather
// form of FlatIP's kernel.
func (*Backend) DotRows(X []float32, d int, ids []int32, q, out []float32) {
	kernels.DotRows(X, d, ids, q, out)
}

// ScoreCodes implements engine.CodeScorer with kernels.ScoreCodes.
func (*Backend) ScoreCodes(codes []int8, scale []float32, d int, q, out []float32) {
	kernels.ScoreCodes(codes, scale, d, q, out)
}

// ScoreCodeRows implements engine.CodeRowScorer with
// kernels.ScoreCodeRows, the gather form of ScoreCodes.
func (*Backend) ScoreCodeRows(codes []int8, scale []float32, d int, ids []int32, q, out []float32) {
	kernels.ScoreCodeRows(codes, scale, d, ids, q, out)
}

// SearchQuantized implements engine.QuantSearcher with
// kernels.SearchQuantized: its rescoring is FlatIP's arithmetic, so the
// scores equal this backend's exact search.
func (*Backend) SearchQuantized(ctx context.Context, m *engine.QuantRows, X, q []float32, nq, k, candidates int) ([][]engine.Hit, error) {
	return kernels.SearchQuantized(ctx, m, X, q, nq, k, candidates, 0)
}

// buffer is host memory holding exactly one of the slices.
type buffer struct {
	f32    []float32
	i32    []int32
	i64    []int64
	dt     engine.DType
	bound  bool // Bind: read-only (it may alias the caller's slice)
	weight bool // BindWeight: a GEMM weight, packed on first use

	mu    sync.Mutex // guards packs
	packs map[packKey]*kernels.PackedB
}

func (b *buffer) DType() engine.DType { return b.dt }
func (b *buffer) Backend() string     { return Name }
func (b *buffer) Len() int {
	switch b.dt {
	case engine.F32:
		return len(b.f32)
	case engine.I32:
		return len(b.i32)
	}
	return len(b.i64)
}

// Alloc implements engine.Memory; memory is zeroed.
func (*Backend) Alloc(dt engine.DType, n int) (engine.Buffer, error) {
	if err := engine.CheckAlloc("cpu", dt, n); err != nil {
		return nil, err
	}
	b := &buffer{dt: dt}
	switch dt {
	case engine.F32:
		b.f32 = make([]float32, n)
	case engine.I32:
		b.i32 = make([]int32, n)
	case engine.I64:
		b.i64 = make([]int64, n)
	default:
		return nil, fmt.Errorf("cpu: unknown dtype %v", dt)
	}
	return b, nil
}

// BindWeight implements engine.WeightBinder: Bind, and where the CPU has
// the packed GEMM kernel, the weight is packed on its first use as a
// GEMM's B into a copy of the same size, kept with the buffer (see Gemm).
func (b *Backend) BindWeight(src []float32) (engine.Buffer, error) {
	buf, err := b.Bind(src)
	if err != nil {
		return nil, err
	}
	buf.(*buffer).weight = true
	return buf, nil
}

// Bind implements engine.Memory: host memory is used in place.
func (*Backend) Bind(src any) (engine.Buffer, error) {
	switch x := src.(type) {
	case []float32:
		return &buffer{dt: engine.F32, f32: x, bound: true}, nil
	case []int32:
		return &buffer{dt: engine.I32, i32: x, bound: true}, nil
	case []int64:
		return &buffer{dt: engine.I64, i64: x, bound: true}, nil
	}
	return nil, fmt.Errorf("cpu: cannot bind %T", src)
}

// Free implements engine.Memory (the garbage collector reclaims memory).
func (*Backend) Free(engine.Buffer) {}

// Sync implements engine.Memory.
func (*Backend) Sync(ctx context.Context) error { return ctx.Err() }

// Upload implements engine.Memory.
func (*Backend) Upload(dst engine.Buffer, off int, src any) error {
	b, err := own(dst)
	if err != nil {
		return err
	}
	if b.bound {
		return fmt.Errorf("cpu: upload: %w", engine.ErrReadOnly)
	}
	return transfer(b, off, src, true)
}

// Download implements engine.Memory.
func (*Backend) Download(dst any, src engine.Buffer, off int) error {
	b, err := own(src)
	if err != nil {
		return err
	}
	return transfer(b, off, dst, false)
}

func transfer(b *buffer, off int, host any, up bool) error {
	var n, room int
	switch h := host.(type) {
	case []float32:
		n, room = len(h), len(b.f32)-off
		if b.dt == engine.F32 && off >= 0 && n <= room {
			copyDir(b.f32[off:off+n], h, up)
			return nil
		}
	case []int32:
		n, room = len(h), len(b.i32)-off
		if b.dt == engine.I32 && off >= 0 && n <= room {
			copyDir(b.i32[off:off+n], h, up)
			return nil
		}
	case []int64:
		n, room = len(h), len(b.i64)-off
		if b.dt == engine.I64 && off >= 0 && n <= room {
			copyDir(b.i64[off:off+n], h, up)
			return nil
		}
	default:
		return fmt.Errorf("cpu: transfer of %T", host)
	}
	return fmt.Errorf("cpu: transfer of %d %T elements at offset %d into a %s buffer of %d", n, host, off, b.dt, b.Len())
}

func copyDir[T any](dev, host []T, up bool) {
	if up {
		copy(dev, host)
	} else {
		copy(host, dev)
	}
}

// own unwraps a buffer of this backend.
func own(x engine.Buffer) (*buffer, error) {
	b, ok := x.(*buffer)
	if !ok || b == nil {
		return nil, fmt.Errorf("cpu: buffer %T belongs to another backend", x)
	}
	return b, nil
}

// f32 returns the float32 slice of x from element off; nil for a nil buffer.
func f32(x engine.Buffer, off int) ([]float32, error) {
	if x == nil {
		return nil, nil
	}
	b, err := own(x)
	if err != nil {
		return nil, err
	}
	if b.dt != engine.F32 || off < 0 || off > len(b.f32) {
		return nil, fmt.Errorf("cpu: want an f32 buffer with offset %d, have %s of %d", off, b.dt, b.Len())
	}
	return b.f32[off:], nil
}

func i32(x engine.Buffer) ([]int32, error) {
	b, err := own(x)
	if err != nil {
		return nil, err
	}
	if b.dt != engine.I32 {
		return nil, fmt.Errorf("cpu: want an i32 buffer, have %s", b.dt)
	}
	return b.i32, nil
}

func i64(x engine.Buffer) ([]int64, error) {
	b, err := own(x)
	if err != nil {
		return nil, err
	}
	if b.dt != engine.I64 {
		return nil, fmt.Errorf("cpu: want an i64 buffer, have %s", b.dt)
	}
	return b.i64, nil
}
