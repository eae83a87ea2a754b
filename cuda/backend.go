//go:build cuda

package cuda

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"
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
// Every call runs on the context's locked OS thread (cu.Ctx) under one
// mutex. The backend's own work — kernels, cuBLAS calls and the
// asynchronous copies through pinned staging — runs on the default
// stream, in submission order; Queue (engine.Queuer) hands out views
// whose work runs on streams of their own (Options.Streams of them), so
// concurrent batches overlap on the device. The streams are blocking
// ones: the default stream's work is ordered with theirs, which makes
// what the backend itself allocated or bound safe for every view to read.
// Buffers come from a caching allocator (Pool) whose free lists are per
// stream, so a freed block is reused only in its stream's order. It is
// safe for concurrent use.
//
// Status: compile-checked by make cuda-check; not yet run on a GPU (no
// device was available when it was written). The kernels themselves are
// tested by the cuda-emu host emulation; cuBLAS, the staging and the
// streams only run on a GPU (benchmarks/device/run.sh).
type Backend struct {
	engine.Unfused // GAT: on the host (tens of nodes)
	*device
	q       int      // the stream: 0 the default one, i > 0 device.streams[i-1]
	release func()   // a view's (Queue); nil for the backend itself
	root    *Backend // a view's backend; nil for the backend itself
}

// device is what a backend and its views share.
type device struct {
	ctx     *cu.Ctx
	dev     cu.Device
	caps    engine.Caps
	fns     map[string]cu.Function // kernel file → its entry
	pool    *Pool[cu.DevicePtr]
	blas    map[int]*blasHandle // per stream (cuBLAS picks its workspace per handle); nil: GEMMs run gemm.cu
	stages  map[int]*staging    // per stream, made on its first transfer; nil: pageable transfers
	queues  *Queues
	streams []cu.Stream // the views' streams (queue i+1 is streams[i]); under mu
	mu      sync.Mutex  // serialises context calls: cu.Ctx records each call's error in one field
	closed  bool
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

// stream is b's stream. Call under b.mu.
func (b *Backend) stream() cu.Stream {
	if b.q == 0 {
		return cu.NoStream
	}
	return b.streams[b.q-1]
}

// staging returns b's stream's staging, made on first use; nil when the
// backend copies from pageable memory (Options.Pageable) or when pinned
// memory for this stream could not be had (remembered: its transfers then
// copy from pageable memory, slower but correct).
func (b *Backend) staging() (*staging, error) {
	var st *staging
	err := b.call(func() error {
		if b.stages == nil {
			return nil
		}
		var ok bool
		if st, ok = b.stages[b.q]; ok {
			return nil
		}
		st, _ = openStaging(b) // nil on failure
		b.stages[b.q] = st
		return nil
	})
	return st, err
}

// poll runs query (a QueryEvent or QueryStream) until the work it watches
// has finished or ctx ends, taking b.mu only for each query: a blocking
// synchronise would hold the context's one thread, and with it every
// other stream's launches, until this stream drained.
func (b *Backend) poll(ctx context.Context, query func()) error {
	for i := 0; ; i++ {
		err := b.call(func() error { query(); return b.ctx.Error() })
		if !errors.Is(err, cu.NotReady) {
			return err // nil: done
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if i < 4 {
			runtime.Gosched()
		} else {
			time.Sleep(min(time.Duration(i-3)*10*time.Microsecond, 200*time.Microsecond))
		}
	}
}

// waitEvent waits for ev (an event never recorded is complete).
func (b *Backend) waitEvent(ev cu.Event) error {
	return b.poll(context.Background(), func() { b.ctx.QueryEvent(ev) })
}

// waitStream waits for every op submitted on b's stream, or for ctx.
func (b *Backend) waitStream(ctx context.Context) error {
	return b.poll(ctx, func() { b.ctx.QueryStream(b.stream()) })
}

// Root is the backend a view belongs to (b itself for the backend):
// caches of bound buffers key on it (engine.Root).
func (b *Backend) Root() engine.Backend {
	if b.root != nil {
		return b.root
	}
	return b
}

// Queue returns a view of the backend whose work runs on a stream of its
// own (engine.Queuer); release returns the stream. Close on the view also
// releases it.
func (b *Backend) Queue() (engine.Backend, func(), error) {
	if err := b.call(func() error { return nil }); err != nil {
		return nil, nil, err
	}
	id, err := b.queues.Acquire(func() error {
		return b.call(func() error {
			s, err := b.ctx.MakeStream(cu.DefaultStream) // blocking: ordered with the default stream
			if err == nil {
				b.streams = append(b.streams, s)
			}
			return err
		})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("cuda: a stream for a queue: %w", err)
	}
	var once sync.Once
	v := &Backend{device: b.device, q: id, root: b.Root().(*Backend)}
	v.release = func() { once.Do(func() { b.queues.Release(id) }) }
	return v, v.release, nil
}

// Queues is how many streams the views spread over (Options.Streams).
func (b *Backend) Queues() int { return b.queues.Max() }

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
	// Streams is how many streams the views of Queue spread over (0:
	// DefaultStreams; 1: every view shares one, beside the default).
	Streams int
}

// New opens device ordinal with the default options.
func New(ordinal int) (*Backend, error) { return NewWith(ordinal, Options{}) }

// NewWith opens device ordinal, loads every kernel and, as o.GEMM says,
// cuBLAS.
func NewWith(ordinal int, o Options) (b *Backend, err error) {
	if o.GEMM > GEMMCuBLAS {
		return nil, fmt.Errorf("cuda: unknown GEMM path %d", o.GEMM)
	}
	if o.Streams == 0 {
		o.Streams = DefaultStreams
	}
	queues, err := NewQueues(o.Streams)
	if err != nil {
		return nil, err
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
	b = &Backend{device: &device{ctx: cu.NewContext(dev, cu.SchedAuto), dev: dev, fns: map[string]cu.Function{}, queues: queues,
		caps: engine.Caps{Device: fmt.Sprintf("cuda: %s (sm_%d), PTX compute_%d", name, arch, ptxArch(arch))}}}
	b.pool = NewPool(b.memAlloc, b.memFree)
	if err := b.loadKernels(ptxArch(arch)); err != nil {
		b.ctx.Close()
		return nil, err
	}
	if err := b.loadBLAS(o.GEMM); err != nil {
		b.ctx.Close()
		return nil, err
	}
	if !o.Pageable { // the default stream's staging now, so that a failure shows at once
		st, err := openStaging(b)
		if err != nil {
			b.Close()
			return nil, err
		}
		b.stages = map[int]*staging{0: st}
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
		b.blas = map[int]*blasHandle{0: bh}
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

// Sync waits for every op submitted through b: on a view, its stream's;
// on the backend itself, every stream's.
func (b *Backend) Sync(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var err error
	if b.q == 0 { // every stream: the context's synchronise (the backend's own Sync is rare: benchmarks, Close)
		err = b.call(func() error { b.ctx.Synchronize(); return b.ctx.Error() })
	} else {
		err = b.waitStream(ctx)
	}
	if err != nil {
		return fmt.Errorf("cuda: sync: %w", err)
	}
	return nil
}

// Close waits for submitted work, frees the cached blocks, destroys the
// views' streams and the context; later calls return ErrClosed. On a view
// it only releases the view (engine.Queuer).
func (b *Backend) Close() error {
	if b.release != nil {
		b.release()
		return nil
	}
	err := b.call(func() error { b.ctx.Synchronize(); return b.ctx.Error() })
	b.pool.Trim()
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true // every later call, a transfer's next chunk or poll included, gets ErrClosed
	var stages []*staging
	for _, st := range b.stages {
		if st != nil {
			stages = append(stages, st)
		}
	}
	b.mu.Unlock()
	for _, st := range stages { // a transfer in flight holds its staging: let it stop before the pages go
		st.mu.Lock()
		defer st.mu.Unlock()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ctx.Synchronize() // copies queued before closed was set
	for _, bh := range b.blas {
		if bh != nil {
			bh.close(b)
		}
	}
	for _, st := range stages {
		st.close(b)
	}
	for i := range b.streams {
		b.ctx.DestroyStream(&b.streams[i]) // a failure leaves it to the context's end
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
		b.ctx.LaunchKernel(fn, int(g.gx), int(g.gy), int(g.gz), int(g.bx), int(by), 1, 0, b.stream(), params)
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
