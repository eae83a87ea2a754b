//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"sync"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/gleaner-rag/gleaner/engine"
)

// buffer is device memory from the pool: n elements of dt at ptr, in a
// block of class bytes. An index buffer (I32, I64) has a host mirror
// (*Mirror[int32] or *Mirror[int64]) for the ops' host-side checks; a
// bound one (Bind) is read-only.
type buffer struct {
	dt     engine.DType
	n      int
	ptr    cu.DevicePtr
	class  int64
	q      int // the stream whose free list takes the block back
	mirror any
	bound  bool
	// derived is what the backend made of a bound buffer (bfloat16
	// copies for GEMMs), freed with it.
	derived *derived
}

type derived struct {
	mu   sync.Mutex
	bf16 map[[2]int]*buffer // (offset, elements) → the rounded copy
}

func (x *buffer) DType() engine.DType { return x.dt }
func (x *buffer) Len() int            { return x.n }
func (x *buffer) Backend() string     { return Name }

func elemSize(dt engine.DType) int64 {
	if dt == engine.I64 {
		return 8
	}
	return 4
}

// Alloc returns n zeroed elements of dt.
func (b *Backend) Alloc(dt engine.DType, n int) (engine.Buffer, error) {
	x, err := b.alloc(dt, n, true)
	if err != nil {
		return nil, err
	}
	if err := b.call(func() error { b.ctx.MemsetD8Async(x.ptr, 0, x.class, b.stream()); return b.ctx.Error() }); err != nil {
		b.pool.Put(x.q, x.ptr, x.class)
		return nil, fmt.Errorf("cuda: zeroing %d bytes: %w", x.class, err)
	}
	return x, nil
}

// scratch returns n elements of dt that the caller overwrites before
// reading them, so they are not zeroed (Alloc zeroes).
func (b *Backend) scratch(dt engine.DType, n int) (*buffer, error) { return b.alloc(dt, n, false) }

// alloc takes n elements of dt from the pool for b's stream, with a host
// mirror that knows them as zeros when the caller zeroes them.
func (b *Backend) alloc(dt engine.DType, n int, zeroed bool) (*buffer, error) {
	if err := engine.CheckAlloc(Name, dt, n); err != nil {
		return nil, err
	}
	bytes := int64(n) * elemSize(dt)
	ptr, class, err := b.pool.Get(b.q, bytes)
	if err != nil {
		return nil, fmt.Errorf("cuda: alloc of %d bytes: %w", bytes, err)
	}
	return &buffer{dt: dt, n: n, ptr: ptr, class: class, q: b.q, mirror: newMirror(dt, n, zeroed)}, nil
}

// newMirror is an index buffer's host mirror (nil for F32).
func newMirror(dt engine.DType, n int, zeroed bool) any {
	switch dt {
	case engine.I32:
		return NewMirror[int32](n, zeroed)
	case engine.I64:
		return NewMirror[int64](n, zeroed)
	}
	return nil
}

// forget makes an index buffer's mirror unknown (a kernel, or a failed
// upload, wrote the buffer).
func (x *buffer) forget() {
	if m, ok := x.mirror.(interface{ Forget() }); ok {
		m.Forget()
	}
}

// Free returns a buffer's block to its stream's free list (the stream
// orders its reuse after every op already submitted there).
func (b *Backend) Free(x engine.Buffer) {
	if d, ok := x.(*buffer); ok && d != nil && d.class > 0 {
		b.pool.Put(d.q, d.ptr, d.class)
		if d.derived != nil {
			d.derived.mu.Lock()
			for _, y := range d.derived.bf16 {
				b.Free(y)
			}
			d.derived.bf16 = nil
			d.derived.mu.Unlock()
		}
		d.class, d.ptr, d.n, d.mirror = 0, 0, 0, nil // a later use is an error, never a write into a reused block
	}
}

// MemoryStats are the allocator's counters (engine.MemoryStater), over
// every stream.
func (b *Backend) MemoryStats() engine.MemoryStats { return b.pool.Stats() }

// Bind uploads src into a new read-only buffer (Upload into it, or an op
// writing it, is an error); an index buffer's mirror aliases src, which
// the engine's contract keeps unchanged.
func (b *Backend) Bind(src any) (engine.Buffer, error) {
	var dt engine.DType
	var n int
	var m any
	switch s := src.(type) {
	case []float32:
		dt, n = engine.F32, len(s)
	case []int32:
		dt, n, m = engine.I32, len(s), BoundMirror(s)
	case []int64:
		dt, n, m = engine.I64, len(s), BoundMirror(s)
	default:
		return nil, fmt.Errorf("cuda: cannot bind %T", src)
	}
	x, err := b.scratch(dt, n) // every element uploaded below
	if err != nil {
		return nil, err
	}
	if err := b.transfer(x, 0, src, true); err != nil {
		b.Free(x)
		return nil, err
	}
	x.bound, x.mirror, x.derived = true, m, &derived{}
	return x, nil
}

// Upload copies host data into dst from element off (and into its
// mirror).
func (b *Backend) Upload(dst engine.Buffer, off int, src any) error {
	d, _ := dst.(*buffer)
	if d != nil && d.bound {
		return fmt.Errorf("cuda: upload: %w", engine.ErrReadOnly)
	}
	if err := b.transfer(dst, off, src, true); err != nil {
		if d != nil { // some chunks may have landed
			d.forget()
		}
		return err
	}
	switch m := d.mirror.(type) { // transfer checked dst, src and the range
	case *Mirror[int32]:
		m.Write(off, src.([]int32))
	case *Mirror[int64]:
		m.Write(off, src.([]int64))
	}
	return nil
}

// Download copies src from element off into host data.
func (b *Backend) Download(dst any, src engine.Buffer, off int) error {
	return b.transfer(src, off, dst, false)
}

// transfer copies between host and the device buffer x from element off:
// up to the device, or down from it.
func (b *Backend) transfer(x engine.Buffer, off int, host any, up bool) error {
	d, p, n, err := b.transferArgs(x, off, host)
	if err != nil || n == 0 {
		return err
	}
	dev, bytes := d.ptr+cu.DevicePtr(int64(off)*elemSize(d.dt)), int64(n)*elemSize(d.dt)
	st, err := b.staging()
	switch {
	case err != nil:
	case st != nil && up:
		err = st.upload(b, dev, unsafe.Slice((*byte)(p), bytes))
	case st != nil:
		err = st.download(b, unsafe.Slice((*byte)(p), bytes), dev)
	default: // from pageable memory: the driver stages it; wait, as the caller may reuse it
		err = b.call(func() error {
			if up {
				b.ctx.MemcpyHtoDAsync(dev, p, bytes, b.stream())
			} else {
				b.ctx.MemcpyDtoHAsync(p, dev, bytes, b.stream())
			}
			return b.ctx.Error()
		})
		if err == nil {
			err = b.waitStream(context.Background())
		}
	}
	if err != nil {
		return fmt.Errorf("cuda: transfer of %d elements (upload %v): %w", n, up, err)
	}
	return nil
}

// transferArgs checks a transfer and returns the device buffer, the host
// slice's address and its length.
func (b *Backend) transferArgs(x engine.Buffer, off int, host any) (*buffer, unsafe.Pointer, int, error) {
	d, err := own(x)
	if err != nil || d == nil {
		return nil, nil, 0, fmt.Errorf("cuda: transfer: %v", err)
	}
	var dt engine.DType
	var p unsafe.Pointer
	var n int
	switch h := host.(type) {
	case []float32:
		dt, n, p = engine.F32, len(h), unsafe.Pointer(unsafe.SliceData(h))
	case []int32:
		dt, n, p = engine.I32, len(h), unsafe.Pointer(unsafe.SliceData(h))
	case []int64:
		dt, n, p = engine.I64, len(h), unsafe.Pointer(unsafe.SliceData(h))
	default:
		return nil, nil, 0, fmt.Errorf("cuda: transfer of %T", host)
	}
	switch {
	case dt != d.dt:
		return nil, nil, 0, fmt.Errorf("cuda: transfer of %v data with a %v buffer", dt, d.dt)
	case off < 0 || n > d.n-off:
		return nil, nil, 0, fmt.Errorf("cuda: transfer of %d elements at %d into %d", n, off, d.n)
	}
	return d, p, n, nil
}

// own returns x as this backend's buffer (nil for nil).
func own(x engine.Buffer) (*buffer, error) {
	if x == nil {
		return nil, nil
	}
	d, ok := x.(*buffer)
	switch {
	case !ok:
		return nil, fmt.Errorf("cuda: buffer from backend %q", x.Backend())
	case d != nil && d.class == 0:
		return nil, fmt.Errorf("cuda: use of a freed buffer")
	}
	return d, nil
}

// arg is the device address of x from element off with the number of
// elements left, checking its dtype; a nil buffer is address 0 with none.
func arg(x engine.Buffer, dt engine.DType, off int) (devArg, int, error) {
	d, err := own(x)
	switch {
	case err != nil:
		return 0, 0, err
	case d == nil:
		return 0, 0, nil
	case d.dt != dt:
		return 0, 0, fmt.Errorf("cuda: want a %v buffer, got %v", dt, d.dt)
	case off < 0 || off > d.n:
		return 0, 0, fmt.Errorf("cuda: offset %d outside %d elements", off, d.n)
	}
	return devArg(d.ptr + cu.DevicePtr(int64(off)*elemSize(dt))), d.n - off, nil
}

// outArg is arg for an op's output: a bound (read-only) buffer is refused,
// and an index buffer's mirror forgets what it held (the kernel writes it).
func outArg(x engine.Buffer, dt engine.DType, off int) (devArg, int, error) {
	p, n, err := arg(x, dt, off)
	if err != nil || x == nil {
		return p, n, err
	}
	d := x.(*buffer)
	if d.bound {
		return 0, 0, fmt.Errorf("cuda: an op's output: %w", engine.ErrReadOnly)
	}
	d.forget()
	return p, n, nil
}

// hostCopy returns the first n elements of an I64 or I32 buffer for the
// host-side structure checks the emulation also makes (CSR pointers,
// source ids): from its mirror, or, when a kernel wrote it, by a
// download. The caller only reads them.
func hostCopy[T int32 | int64](b *Backend, x engine.Buffer, n int) ([]T, error) {
	if d, ok := x.(*buffer); ok && d != nil {
		if m, ok := d.mirror.(*Mirror[T]); ok {
			if v, ok := m.Read(n); ok {
				return v, nil
			}
		}
	}
	out := make([]T, n)
	if n == 0 {
		return out, nil
	}
	return out, b.Download(out, x, 0)
}
