//go:build cgo && !purego

package emu_test

import (
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
