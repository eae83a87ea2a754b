//go:build cgo && !purego

// Package emu is the cuda-emu backend: gleaner's CUDA kernels (the .cu
// sources of cuda/kernels, unchanged) compiled as C++ against a small
// header that runs each CUDA thread as an OS thread, launched with the
// same configurations (cuda.Elementwise, cuda.Rows) as the GPU backend. It
// exists so that every CI run tests the kernels without a GPU; it is slow
// and not for serving. Ops whose kernels are not written yet return
// engine.ErrNotImplemented (kerneltest lists them).
package emu

/*
#cgo CXXFLAGS: -std=c++20 -O2
#cgo LDFLAGS: -lstdc++ -pthread
#include "launch.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/gleaner-rag/gleaner/engine"
)

// Name is the backend's registry name.
const Name = "cuda-emu"

func init() { engine.Register(Name, func() (engine.Backend, error) { return New(), nil }) }

// Backend runs the kernels by host emulation. It is safe for concurrent
// use (launches are serialised).
//
// Like the GPU backend it hands out queue views (engine.Queuer); their
// work runs at once, as all of it does here, but the emulation enforces
// the contract the GPU's streams rely on: a buffer allocated through a
// view is used only through that view or the backend itself, and not
// after the view is released; a released view refuses work.
type Backend struct {
	engine.Unfused          // GAT runs on the host (tens of nodes)
	view           *view    // nil for the backend itself
	root           *Backend // a view's backend
}

// Root is the backend a view belongs to (engine.Root).
func (e *Backend) Root() engine.Backend {
	if e.root != nil {
		return e.root
	}
	return e
}

// view is a queue handed out by Queue.
type view struct{ released atomic.Bool }

// Queue returns a view of the backend on a queue of its own
// (engine.Queuer).
func (e *Backend) Queue() (engine.Backend, func(), error) {
	if err := e.live(); err != nil {
		return nil, nil, err
	}
	v := &Backend{view: &view{}, root: e.Root().(*Backend)}
	return v, func() { v.view.released.Store(true) }, nil
}

// Queues is how many queues the views spread over: 2, so that callers
// run concurrent batches here as they would on a GPU.
func (e *Backend) Queues() int { return 2 }

// live refuses work through a released view.
func (e *Backend) live() error {
	if e.view != nil && e.view.released.Load() {
		return fmt.Errorf("%s: use of a released queue view", Name)
	}
	return nil
}

// New returns the emulated CUDA backend.
func New() *Backend { return &Backend{} }

func (e *Backend) Name() string { return Name }

func (e *Backend) Caps() engine.Caps {
	return engine.Caps{Device: "cuda-emu: CUDA kernels on host threads"}
}

// buffer is host memory standing for device memory.
type buffer struct {
	dt    engine.DType
	f32   []float32
	i32   []int32
	i64   []int64
	freed bool  // a use after Free is an error here too, as on the GPU it would corrupt a reused block
	bound bool  // Bind: read-only, as on the GPU (which keeps what it derives from it)
	owner *view // the queue view it was allocated through (nil: the backend itself)
}

func (b *buffer) DType() engine.DType { return b.dt }
func (b *buffer) Backend() string     { return Name }
func (b *buffer) Len() int            { return max(len(b.f32), len(b.i32), len(b.i64)) }

func (e *Backend) own(x engine.Buffer) (*buffer, error) {
	if x == nil {
		return nil, nil
	}
	b, ok := x.(*buffer)
	switch {
	case !ok:
		return nil, fmt.Errorf("%s: buffer from backend %q", Name, x.Backend())
	case b == nil:
		return nil, nil
	case b.freed:
		return nil, fmt.Errorf("%s: use of a freed buffer", Name)
	case e.live() != nil:
		return nil, e.live()
	case b.owner != nil && b.owner.released.Load():
		return nil, fmt.Errorf("%s: use of a buffer of a released queue view (free a view's buffers before releasing it)", Name)
	case b.owner != nil && e.view != nil && b.owner != e.view:
		return nil, fmt.Errorf("%s: a buffer of another queue view (on a GPU, its stream is not ordered with this one)", Name)
	}
	return b, nil
}

func (e *Backend) Alloc(dt engine.DType, n int) (engine.Buffer, error) {
	if err := errors.Join(engine.CheckAlloc(Name, dt, n), e.live()); err != nil {
		return nil, err
	}
	switch dt {
	case engine.F32:
		return &buffer{dt: dt, f32: make([]float32, n), owner: e.view}, nil
	case engine.I32:
		return &buffer{dt: dt, i32: make([]int32, n), owner: e.view}, nil
	case engine.I64:
		return &buffer{dt: dt, i64: make([]int64, n), owner: e.view}, nil
	}
	return nil, fmt.Errorf("%s: unknown dtype %v", Name, dt)
}

// Bind copies src into a read-only buffer (a device gets its own copy, as
// the GPU would).
func (e *Backend) Bind(src any) (engine.Buffer, error) {
	if err := e.live(); err != nil {
		return nil, err
	}
	var buf *buffer
	switch x := src.(type) {
	case []float32:
		buf = &buffer{dt: engine.F32, f32: append([]float32(nil), x...)}
	case []int32:
		buf = &buffer{dt: engine.I32, i32: append([]int32(nil), x...)}
	case []int64:
		buf = &buffer{dt: engine.I64, i64: append([]int64(nil), x...)}
	default:
		return nil, fmt.Errorf("%s: cannot bind %T", Name, src)
	}
	buf.bound, buf.owner = true, e.view
	return buf, nil
}

func (e *Backend) Free(x engine.Buffer) {
	if b, ok := x.(*buffer); ok && b != nil {
		b.freed = true
	}
}
func (e *Backend) Sync(ctx context.Context) error { return errors.Join(ctx.Err(), e.live()) }

func (e *Backend) Upload(dst engine.Buffer, off int, src any) error {
	b, err := e.own(dst)
	if err != nil || b == nil {
		return fmt.Errorf("%s: upload: %v", Name, err)
	}
	if b.bound {
		return fmt.Errorf("%s: upload: %w", Name, engine.ErrReadOnly)
	}
	return transfer(b, off, src, true)
}

func (e *Backend) Download(dst any, src engine.Buffer, off int) error {
	b, err := e.own(src)
	if err != nil || b == nil {
		return fmt.Errorf("%s: download: %v", Name, err)
	}
	return transfer(b, off, dst, false)
}

func transfer(b *buffer, off int, host any, up bool) error {
	var err error
	switch h := host.(type) {
	case []float32:
		err = move(b, engine.F32, b.f32, off, h, up)
	case []int32:
		err = move(b, engine.I32, b.i32, off, h, up)
	case []int64:
		err = move(b, engine.I64, b.i64, off, h, up)
	default:
		err = fmt.Errorf("%s: transfer of %T", Name, host)
	}
	return err
}

// move copies host into dev from element off (up) or back (down).
func move[T any](b *buffer, want engine.DType, dev []T, off int, host []T, up bool) error {
	switch {
	case b.dt != want:
		return fmt.Errorf("%s: transfer of %v data with a %v buffer", Name, want, b.dt)
	case off < 0 || len(host) > len(dev)-off:
		return fmt.Errorf("%s: transfer of %d elements at %d into %d", Name, len(host), off, len(dev))
	case up:
		copy(dev[off:], host)
	default:
		copy(host, dev[off:])
	}
	return nil
}

// f32 returns a buffer's floats from element off (nil for a nil buffer).
func (e *Backend) f32(x engine.Buffer, off int) ([]float32, error) {
	b, err := e.own(x)
	switch {
	case err != nil:
		return nil, err
	case b == nil:
		return nil, nil
	case b.dt != engine.F32:
		return nil, fmt.Errorf("%s: want a f32 buffer, got %v", Name, b.dt)
	case off < 0 || off > len(b.f32):
		return nil, fmt.Errorf("%s: offset %d outside %d elements", Name, off, len(b.f32))
	}
	return b.f32[off:], nil
}

// out32 is f32 for an op's output: a bound buffer is read-only.
func (e *Backend) out32(x engine.Buffer, off int) ([]float32, error) {
	if err := e.writable(x); err != nil {
		return nil, err
	}
	return e.f32(x, off)
}

// outI32 is i32 for an op's output.
func (e *Backend) outI32(x engine.Buffer) ([]int32, error) {
	if err := e.writable(x); err != nil {
		return nil, err
	}
	return e.i32(x)
}

func (e *Backend) writable(x engine.Buffer) error {
	if b, ok := x.(*buffer); ok && b != nil && b.bound {
		return fmt.Errorf("%s: an op's output: %w", Name, engine.ErrReadOnly)
	}
	return nil
}

func (e *Backend) i32(x engine.Buffer) ([]int32, error) {
	b, err := e.own(x)
	if err != nil || b == nil || b.dt != engine.I32 {
		return nil, fmt.Errorf("%s: want an i32 buffer (%v)", Name, err)
	}
	return b.i32, nil
}

func (e *Backend) i64(x engine.Buffer) ([]int64, error) {
	b, err := e.own(x)
	if err != nil || b == nil || b.dt != engine.I64 {
		return nil, fmt.Errorf("%s: want an i64 buffer (%v)", Name, err)
	}
	return b.i64, nil
}

func fp(s []float32) *C.float {
	if len(s) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&s[0]))
}
