//go:build cuda

package cuda

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/gleaner-rag/gleaner/cuda/ptx"
	"github.com/gleaner-rag/gleaner/engine"
)

func init() {
	engine.Register(Name, func() (engine.Backend, error) { return Open(0) })
}

// Open opens GPU ordinal as an engine.Backend (the registry's "cuda" is
// ordinal 0; the CLI's --device picks another).
func Open(ordinal int) (engine.Backend, error) {
	b, err := New(ordinal)
	if err != nil {
		return nil, err // not a typed nil inside the interface
	}
	return b, nil
}

// Backend runs gleaner's kernels (cuda/kernels, loaded from the embedded
// PTX of cuda/ptx) on one GPU through the driver API (gorgonia.org/cu).
// All work goes through one context whose calls run on a locked OS thread
// (cu.Ctx) and its default stream — kernels, cuBLAS calls and the
// asynchronous copies through pinned staging — so ops run in submission
// order and Sync waits for them; one stream per device keeps the caching
// allocator's reuse safe without events. Buffers come from a caching
// allocator (Pool). It is safe for concurrent use.
//
// Status: compile-checked by make cuda-check; not yet run on a GPU (no
// device was available when it was written). The kernels themselves are
// tested by the cuda-emu host emulation; cuBLAS and the staging only run
// on a GPU (benchmarks/device/run.sh).
type Backend struct {
	engine.Unfused // GAT: on the host (tens of nodes)
	ctx            *cu.Ctx
	dev            cu.Device
	caps           engine.Caps
	fns            map[string]cu.Function // kernel file → its entry
	pool           *Pool[cu.DevicePtr]
	blas           *blasHandle // nil: GEMMs run gemm.cu
	stage          *staging    // nil: transfers copy from pageable memory, synchronously
	mu             sync.Mutex  // serialises context calls: cu.Ctx records each call's error in one field
	closed         bool
}

// ErrClosed is returned by every call after Close.
var ErrClosed = errors.New("cuda: backend closed")

// call runs one context call under b.mu; f returns that call's error
// (for the calls that record it in the context: b.ctx.Error()).
func (b *Backend) call(f func() error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	return f()
}

// GEMMPath picks what runs the backend's GEMMs.
type GEMMPath uint8

// GEMM paths.
const (
	// GEMMAuto (the zero value) uses cuBLAS when libcublas loads, else
	// gemm.cu; Caps().Device says which.
	GEMMAuto   GEMMPath = iota
	GEMMKernel          // gemm.cu only (float32 whatever the op's Precision allows)
	GEMMCuBLAS          // cuBLAS, or New fails
)

// Options configure New.
type Options struct {
	GEMM GEMMPath
	// Pageable turns the pinned staging of transfers off: each upload and
	// download then copies from Go memory synchronously.
	Pageable bool
}

// New opens device ordinal with the default options.
func New(ordinal int) (*Backend, error) { return NewWith(ordinal, Options{}) }

// NewWith opens device ordinal, loads every kernel and, as o.GEMM says,
// cuBLAS.
func NewWith(ordinal int, o Options) (b *Backend, err error) {
	if o.GEMM > GEMMCuBLAS {
		return nil, fmt.Errorf("cuda: unknown GEMM path %d", o.GEMM)
	}
	defer func() { // cu panics on context creation failures
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("cuda: device %d: %v", ordinal, r)
		}
	}()
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("cuda: counting devices: %w", err)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cuda: device %d of %d", ordinal, n)
	}
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return nil, fmt.Errorf("cuda: device %d: %w", ordinal, err)
	}
	arch, name, err := describe(dev)
	if err != nil {
		return nil, err
	}
	b = &Backend{ctx: cu.NewContext(dev, cu.SchedAuto), dev: dev, fns: map[string]cu.Function{},
		caps: engine.Caps{Device: fmt.Sprintf("cuda: %s (sm_%d), PTX compute_%d", name, arch, ptxArch(arch))}}
	b.pool = NewPool(b.memAlloc, b.memFree)
	if err := b.loadKernels(ptxArch(arch)); err != nil {
		b.ctx.Close()
		return nil, err
	}
	if err := b.loadBLAS(o.GEMM); err != nil {
		b.ctx.Close()
		return nil, err
	}
	if !o.Pageable {
		if b.stage, err = openStaging(b); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// loadBLAS opens cuBLAS as path asks and records the GEMM path in Caps.
func (b *Backend) loadBLAS(path GEMMPath) error {
	if path == GEMMKernel {
		b.caps.Device += ", GEMM: gemm.cu"
		return nil
	}
	bh, err := openCuBLAS(b)
	switch {
	case err == nil:
		b.blas = bh
		b.caps.Device += ", GEMM: cuBLAS"
	case path == GEMMCuBLAS:
		return err
	default:
		b.caps.Device += fmt.Sprintf(", GEMM: gemm.cu (%v)", err)
	}
	return nil
}

func (b *Backend) memAlloc(bytes int64) (p cu.DevicePtr, err error) {
	err = b.call(func() error { p, err = b.ctx.MemAlloc(bytes); return err })
	return p, err
}

func (b *Backend) memFree(p cu.DevicePtr) {
	b.call(func() error { b.ctx.MemFree(p); return b.ctx.Error() }) // a failed free leaks the block; nothing else to do
}

// describe returns a device's compute capability (major·10 + minor) and
// name, refusing devices older than the PTX (compute_80).
func describe(dev cu.Device) (int, string, error) {
	attrs, err := dev.Attributes(cu.ComputeCapabilityMajor, cu.ComputeCapabilityMinor)
	if err != nil {
		return 0, "", fmt.Errorf("cuda: device attributes: %w", err)
	}
	arch := attrs[0]*10 + attrs[1]
	name, _ := dev.Name()
	if arch < ptx.Archs[0] {
		return 0, "", fmt.Errorf("cuda: %s has compute capability %d.%d; gleaner's PTX needs 8.0 or newer", name, attrs[0], attrs[1])
	}
	return arch, name, nil
}

// ptxArch is the newest embedded PTX the device can JIT-compile.
func ptxArch(arch int) int {
	best := ptx.Archs[0]
	for _, a := range ptx.Archs {
		if a <= arch {
			best = a
		}
	}
	return best
}

// loadKernels loads each kernel's module on the context's thread and looks
// up its entry.
func (b *Backend) loadKernels(arch int) error {
	for _, k := range ptx.Kernels() {
		src, err := ptx.Source(k, arch)
		if err != nil {
			return err
		}
		entries := ptx.Entries(src)
		if len(entries) != 1 {
			return fmt.Errorf("cuda: %s: want one kernel entry in its PTX, found %v", k, entries)
		}
		var fn cu.Function
		err = b.call(func() error {
			return b.ctx.Do(func() error { // on the context's thread
				m, err := cu.LoadData(src)
				if err != nil {
					return err
				}
				fn, err = m.Function(entries[0])
				return err
			})
		})
		if err != nil {
			return fmt.Errorf("cuda: loading kernel %s (compute_%d): %w", k, arch, err)
		}
		b.fns[k] = fn
	}
	return nil
}

func (b *Backend) Name() string      { return Name }
func (b *Backend) Caps() engine.Caps { return b.caps }

// Sync waits for every submitted op.
func (b *Backend) Sync(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := b.call(func() error { b.ctx.Synchronize(); return b.ctx.Error() }); err != nil {
		return fmt.Errorf("cuda: sync: %w", err)
	}
	return nil
}

// Close waits for submitted work, frees the cached blocks and destroys the
// context; later calls return ErrClosed.
func (b *Backend) Close() error {
	err := b.call(func() error { b.ctx.Synchronize(); return b.ctx.Error() })
	b.pool.Trim()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if b.blas != nil {
		b.blas.close(b)
	}
	if b.stage != nil {
		b.stage.close(b)
	}
	return errors.Join(err, b.ctx.Close())
}

// grid is a launch: blocks in x, y, z and threads per block in x (and y,
// for the GEMM's square tiles).
type grid struct{ gx, gy, gz, bx, by uint32 }

func rows(l Launch) grid { return grid{l.Grid, 1, 1, l.Block, 1} }

// launch runs kernel k with args marshalled as the kernel's parameters:
// int → int, float32 → float, int64 → long long, bool → int, a buffer (or
// devArg) → a device pointer. Every parameter occupies one 8-byte slot
// (cu.Ctx.LaunchKernel copies 8 bytes per parameter; the driver reads the
// parameter's own size from it, little-endian).
func (b *Backend) launch(k string, g grid, args ...any) error {
	fn, ok := b.fns[k]
	if !ok {
		return fmt.Errorf("cuda: no kernel %q", k)
	}
	slots := make([]uint64, len(args))
	params := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		v, err := slot(a)
		if err != nil {
			return fmt.Errorf("cuda: %s: parameter %d: %w", k, i, err)
		}
		slots[i] = v
		params[i] = unsafe.Pointer(&slots[i])
	}
	by := max(g.by, 1)
	err := b.call(func() error {
		b.ctx.LaunchKernel(fn, int(g.gx), int(g.gy), int(g.gz), int(g.bx), int(by), 1, 0, cu.NoStream, params)
		return b.ctx.Error()
	})
	if err != nil {
		return fmt.Errorf("cuda: launching %s: %w", k, err)
	}
	return nil
}

// devArg is a device address with an element offset already applied.
type devArg cu.DevicePtr

func slot(a any) (uint64, error) {
	switch v := a.(type) {
	case int:
		if v < math.MinInt32 || v > math.MaxInt32 {
			return 0, fmt.Errorf("int %d overflows the kernel's int", v)
		}
		return uint64(uint32(int32(v))), nil
	case float32:
		return uint64(math.Float32bits(v)), nil
	case int64:
		return uint64(v), nil
	case bool:
		if v {
			return 1, nil
		}
		return 0, nil
	case devArg:
		return uint64(v), nil
	case *buffer:
		if v == nil {
			return 0, nil
		}
		return uint64(v.ptr), nil
	}
	return 0, fmt.Errorf("unsupported parameter type %T", a)
}
