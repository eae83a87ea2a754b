//go:build cgo && !purego

package emu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gleaner-rag/gleaner/cuda/emu"
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
