//go:build !cuda

package engine_test

import (
	"errors"
	"testing"

	"github.com/gleaner-rag/gleaner/cuda"
	"github.com/gleaner-rag/gleaner/engine"
)

// checkCUDANotBuilt: without the cuda tag, selecting the cuda backend is
// ErrNotBuilt, never a silent fallback.
func checkCUDANotBuilt(t *testing.T) {
	if _, err := engine.Open("cuda"); !errors.Is(err, cuda.ErrNotBuilt) {
		t.Errorf("cuda without the tag: %v", err)
	}
}
