//go:build cgo && !purego

package emu

/*
#include "launch.h"
*/
import "C"

import (
	"unsafe"

	"github.com/gleaner-rag/gleaner/cuda"
	"github.com/gleaner-rag/gleaner/engine"
)

// Axpby launches axpby.cu.
func (*Backend) Axpby(op engine.AxpbyOp) error {
	x, err1 := f32(op.X, 0)
	y, err2 := f32(op.Y, 0)
	out, err3 := f32(op.Out, 0)
	if err := firstErr(err1, err2, err3); err != nil {
		return err
	}
	if op.N < 0 || len(x) < op.N || len(y) < op.N || len(out) < op.N {
		return shapeErr("axpby")
	}
	l := cuda.Elementwise(op.N)
	C.emu_axpby(C.uint(l.Grid), C.uint(l.Block), C.int(op.N), C.float(op.Alpha), fp(x), C.float(op.Beta), fp(y), fp(out))
	return nil
}

// Activate launches activate.cu.
func (*Backend) Activate(op engine.ActivateOp) error {
	x, err1 := f32(op.X, 0)
	out, err2 := f32(op.Out, 0)
	if err := firstErr(err1, err2); err != nil {
		return err
	}
	if op.N < 0 || len(x) < op.N || len(out) < op.N {
		return shapeErr("activate")
	}
	l := cuda.Elementwise(op.N)
	C.emu_activate(C.uint(l.Grid), C.uint(l.Block), C.int(op.Act), C.int(op.N), fp(x), fp(out))
	return nil
}

// BiasAct launches biasact.cu.
func (*Backend) BiasAct(op engine.BiasActOp) error {
	x, err1 := f32(op.X, op.Off)
	bias, err2 := f32(op.Bias, 0)
	if err := firstErr(err1, err2); err != nil {
		return err
	}
	ld := op.LD
	if ld == 0 {
		ld = op.Cols
	}
	if op.Rows < 0 || op.Cols < 0 || ld < op.Cols || (op.Rows > 0 && len(x) < (op.Rows-1)*ld+op.Cols) || (bias != nil && len(bias) < op.Cols) {
		return shapeErr("bias_act")
	}
	l := cuda.Rows(op.Rows)
	C.emu_bias_act(C.uint(l.Grid), C.uint(l.Block), C.int(op.Rows), C.int(op.Cols), C.int(ld), fp(bias), C.int(op.Act), fp(x))
	return nil
}

// Softmax launches softmax.cu.
func (*Backend) Softmax(op engine.SoftmaxOp) error {
	x, err1 := f32(op.X, 0)
	m, err2 := f32(op.Mask, 0)
	out, err3 := f32(op.Out, 0)
	if err := firstErr(err1, err2, err3); err != nil {
		return err
	}
	n := op.Rows * op.Cols
	if op.Rows < 0 || op.Cols < 0 || len(x) < n || len(out) < n || (op.Mask != nil && len(m) < n) {
		return shapeErr("softmax")
	}
	l := cuda.Rows(op.Rows)
	C.emu_softmax(C.uint(l.Grid), C.uint(l.Block), C.int(op.Rows), C.int(op.Cols), fp(x), fp(m), fp(out))
	return nil
}

// LayerNorm launches layernorm.cu.
func (*Backend) LayerNorm(op engine.LayerNormOp) error {
	x, err1 := f32(op.X, 0)
	g, err2 := f32(op.Gamma, 0)
	b, err3 := f32(op.Beta, 0)
	out, err4 := f32(op.Out, 0)
	if err := firstErr(err1, err2, err3, err4); err != nil {
		return err
	}
	if n := op.Rows * op.Cols; op.Rows < 0 || op.Cols <= 0 || len(x) < n || len(out) < n || len(g) < op.Cols || len(b) < op.Cols {
		return shapeErr("layernorm")
	}
	l := cuda.Rows(op.Rows)
	C.emu_layer_norm(C.uint(l.Grid), C.uint(l.Block), C.int(op.Rows), C.int(op.Cols), fp(x), fp(g), fp(b), C.float(op.Eps), fp(out))
	return nil
}

// SpMM launches spmm.cu after checking the CSR structure on the host.
func (*Backend) SpMM(op engine.SpMMOp) error {
	ptr, err1 := i64(op.Ptr)
	idx, err2 := i32(op.Idx)
	val, err3 := f32(op.Val, 0)
	x, err4 := f32(op.X, 0)
	y, err5 := f32(op.Y, 0)
	if err := firstErr(err1, err2, err3, err4, err5); err != nil {
		return err
	}
	a := engine.CSRMatrix{Rows: op.Rows, Cols: op.Cols, Ptr: ptr, Idx: idx, Val: val}
	if err := a.Check(); err != nil {
		return err
	}
	if op.D < 0 || len(x) < op.Cols*op.D || len(y) < op.Rows*op.D {
		return shapeErr("spmm")
	}
	l := cuda.Rows(op.Rows)
	C.emu_spmm(C.uint(l.Grid), C.uint(l.Block), C.int(op.Rows), C.int(op.D), (*C.longlong)(unsafe.Pointer(&ptr[0])),
		(*C.int)(unsafe.Pointer(unsafe.SliceData(idx))), fp(val), fp(x), fp(y))
	return nil
}

// The kernels below are not written yet.

func (*Backend) Gemm(engine.GemmOp) error { return engine.ErrNotImplemented }
func (*Backend) BatchedGemm(engine.GemmOp, int, int, int, int) error {
	return engine.ErrNotImplemented
}
func (*Backend) Attention(engine.AttentionOp) error         { return engine.ErrNotImplemented }
func (*Backend) EdgeAttention(engine.EdgeAttentionOp) error { return engine.ErrNotImplemented }
func (*Backend) TopK(engine.TopKOp) error                   { return engine.ErrNotImplemented }
func (*Backend) FlatIP(engine.FlatIPOp) error               { return engine.ErrNotImplemented }

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
