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
	"fmt"
	"unsafe"

	"github.com/gleaner-rag/gleaner/engine"
)

// Name is the backend's registry name.
const Name = "cuda-emu"

func init() { engine.Register(Name, func() (engine.Backend, error) { return New(), nil }) }

// Backend runs the kernels by host emulation. It is safe for concurrent
// use (launches are serialised).
type Backend struct {
	engine.Unfused // GAT runs on the host (tens of nodes)
}

// New returns the emulated CUDA backend.
func New() *Backend { return &Backend{} }

func (*Backend) Name() string { return Name }

func (*Backend) Caps() engine.Caps {
	return engine.Caps{Device: "cuda-emu: CUDA kernels on host threads"}
}

// buffer is host memory standing for device memory.
type buffer struct {
	dt    engine.DType
	f32   []float32
	i32   []int32
	i64   []int64
	freed bool // a use after Free is an error here too, as on the GPU it would corrupt a reused block
	bound bool // Bind: read-only, as on the GPU (which keeps what it derives from it)
}

func (b *buffer) DType() engine.DType { return b.dt }
func (b *buffer) Backend() string     { return Name }
func (b *buffer) Len() int            { return max(len(b.f32), len(b.i32), len(b.i64)) }

func own(x engine.Buffer) (*buffer, error) {
	if x == nil {
		return nil, nil
	}
	b, ok := x.(*buffer)
	switch {
	case !ok:
		return nil, fmt.Errorf("%s: buffer from backend %q", Name, x.Backend())
	case b != nil && b.freed:
		return nil, fmt.Errorf("%s: use of a freed buffer", Name)
	}
	return b, nil
}

func (*Backend) Alloc(dt engine.DType, n int) (engine.Buffer, error) {
	if err := engine.CheckAlloc(Name, dt, n); err != nil {
		return nil, err
	}
	switch dt {
	case engine.F32:
		return &buffer{dt: dt, f32: make([]float32, n)}, nil
	case engine.I32:
		return &buffer{dt: dt, i32: make([]int32, n)}, nil
	case engine.I64:
		return &buffer{dt: dt, i64: make([]int64, n)}, nil
	}
	return nil, fmt.Errorf("%s: unknown dtype %v", Name, dt)
}

// Bind copies src into a read-only buffer (a device gets its own copy, as
// the GPU would).
func (b *Backend) Bind(src any) (engine.Buffer, error) {
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
	buf.bound = true
	return buf, nil
}

func (*Backend) Free(x engine.Buffer) {
	if b, ok := x.(*buffer); ok && b != nil {
		b.freed = true
	}
}
func (*Backend) Sync(ctx context.Context) error { return ctx.Err() }

func (*Backend) Upload(dst engine.Buffer, off int, src any) error {
	b, err := own(dst)
	if err != nil || b == nil {
		return fmt.Errorf("%s: upload: %v", Name, err)
	}
	if b.bound {
		return fmt.Errorf("%s: upload: %w", Name, engine.ErrReadOnly)
	}
	return transfer(b, off, src, true)
}

func (*Backend) Download(dst any, src engine.Buffer, off int) error {
	b, err := own(src)
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
func f32(x engine.Buffer, off int) ([]float32, error) {
	b, err := own(x)
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
func out32(x engine.Buffer, off int) ([]float32, error) {
	if err := writable(x); err != nil {
		return nil, err
	}
	return f32(x, off)
}

// outI32 is i32 for an op's output.
func outI32(x engine.Buffer) ([]int32, error) {
	if err := writable(x); err != nil {
		return nil, err
	}
	return i32(x)
}

func writable(x engine.Buffer) error {
	if b, ok := x.(*buffer); ok && b != nil && b.bound {
		return fmt.Errorf("%s: an op's output: %w", Name, engine.ErrReadOnly)
	}
	return nil
}

func i32(x engine.Buffer) ([]int32, error) {
	b, err := own(x)
	if err != nil || b == nil || b.dt != engine.I32 {
		return nil, fmt.Errorf("%s: want an i32 buffer (%v)", Name, err)
	}
	return b.i32, nil
}

func i64(x engine.Buffer) ([]int64, error) {
	b, err := own(x)
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

func shapeErr(op string) error {
	return fmt.Errorf("%s: %s: buffers too short for the shape", Name, op)
}
