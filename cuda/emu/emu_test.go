//go:build cgo && !purego

package emu_test

import (
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/cuda/emu"
	"github.com/gleaner-rag/gleaner/kernels/kerneltest"
)

// The emulated kernels pass the conformance suite; the list of ops still
// to write is pinned, so a new kernel (or a regression) shows here.
func TestConformance(t *testing.T) {
	skipped := kerneltest.RunAll(t, emu.New())
	want := []string{"Attention", "TopK", "FlatIP"}
	slices.Sort(skipped)
	slices.Sort(want)
	if !slices.Equal(skipped, want) {
		t.Errorf("skipped (not implemented) %v, want %v", skipped, want)
	}
}
