//go:build cgo && !purego

package emu_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/cuda/emu"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/kernels/kerneltest"
)

// The emulated kernels pass the whole conformance suite: none is skipped.
// (The fused ops run through the engine's composed fallbacks on them.)
func TestConformance(t *testing.T) {
	if skipped := kerneltest.RunAll(t, emu.New()); len(skipped) > 0 {
		t.Errorf("ops not implemented by the CUDA kernels: %v", skipped)
	}
}

// TestRoundBF16: bf16.cu rounds to the nearest bfloat16 (ties to even)
// and keeps NaN a NaN, against a reference that picks between the two
// neighbouring bfloat16 values by their float64 distance.
func TestRoundBF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := []float32{0, -0, 1, -1, 1.00390625, 1.01171875, math.MaxFloat32, -math.MaxFloat32, 1e-40, float32(math.Inf(1)), float32(math.Inf(-1))}
	for range 5000 {
		x = append(x, float32(rng.NormFloat64()*math.Pow(10, float64(rng.IntN(20)-10))), math.Float32frombits(rng.Uint32()&0x7F7FFFFF))
	}
	got := emu.RoundBF16(append(x, float32(math.NaN())))
	for i, v := range x {
		if want := nearestBF16(v); got[i] != want {
			t.Fatalf("%v (bits %08x): bf16 %04x, want %04x", v, math.Float32bits(v), got[i], want)
		}
	}
	if nan := got[len(x)]; nan&0x7F80 != 0x7F80 || nan&0x7F == 0 {
		t.Fatalf("NaN rounded to %04x", nan)
	}
}

func nearestBF16(v float32) uint16 {
	lo := uint16(math.Float32bits(v) >> 16) // truncation: toward zero
	hi := lo + 1
	vl, vh := float64(math.Float32frombits(uint32(lo)<<16)), float64(math.Float32frombits(uint32(hi)<<16))
	if hi&0x7F80 == 0x7F80 { // past the largest finite value: IEEE overflows to ±Inf at 2¹²⁸
		vh = math.Copysign(math.Ldexp(1, 128), vl)
	}
	dl, dh := math.Abs(float64(v)-vl), math.Abs(float64(v)-vh)
	switch {
	case math.IsInf(float64(v), 0) || dl < dh:
		return lo
	case dh < dl:
		return hi
	case lo&1 == 0:
		return lo
	}
	return hi
}

// TestQueueContract: the emulation refuses what a GPU's streams would get
// wrong — a buffer of one queue view used through another, a view used
// after its release, a view's buffer used after the view's release — and
// allows the backend's own buffers on every view.
func TestQueueContract(t *testing.T) {
	be := emu.New()
	shared, _ := be.Bind([]float32{1, 2, 3})
	v1, release1, err := be.Queue()
	if err != nil {
		t.Fatal(err)
	}
	v2, release2, _ := be.Queue()
	defer release2()
	x1, _ := engine.Upload(v1, []float32{4, 5, 6})
	out1, _ := v1.Alloc(engine.F32, 3)
	axpby := func(v engine.Backend, x, out engine.Buffer) error {
		return v.Axpby(engine.AxpbyOp{N: 3, Alpha: 1, X: x, Beta: 1, Y: shared, Out: out})
	}
	if err := axpby(v1, x1, out1); err != nil {
		t.Fatalf("a view with its own buffers and the backend's: %v", err)
	}
	if err := axpby(be, x1, out1); err != nil {
		t.Fatalf("the backend itself with a view's buffers: %v", err)
	}
	out2, _ := v2.Alloc(engine.F32, 3)
	if err := axpby(v2, x1, out2); err == nil || !strings.Contains(err.Error(), "another queue") {
		t.Fatalf("a buffer of view 1 on view 2: %v", err)
	}
	release1()
	if err := axpby(v1, x1, out1); err == nil || !strings.Contains(err.Error(), "released") {
		t.Fatalf("a released view: %v", err)
	}
	if _, err := v1.Alloc(engine.F32, 1); err == nil {
		t.Fatal("Alloc through a released view: no error")
	}
	if err := v1.Sync(context.Background()); err == nil {
		t.Fatal("Sync through a released view: no error")
	}
	if err := axpby(be, x1, out2); err == nil || !strings.Contains(err.Error(), "released queue view") {
		t.Fatalf("a released view's buffer on the backend: %v", err)
	}
}

// TestQueueRoot: a view names its backend (engine.Root), which caches of
// bound buffers key on, and a view of a view has the same root.
func TestQueueRoot(t *testing.T) {
	be := emu.New()
	v, release, _ := be.Queue()
	defer release()
	vv, release2, _ := v.(engine.Queuer).Queue()
	defer release2()
	if engine.Root(v) != engine.Backend(be) || engine.Root(vv) != engine.Backend(be) || engine.Root(be) != engine.Backend(be) {
		t.Fatalf("roots: %p %p %p, want %p", engine.Root(v), engine.Root(vv), engine.Root(be), be)
	}
}
