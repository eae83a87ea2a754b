//go:build cgo && !purego

package seeder

import (
	"testing"

	"github.com/gleaner-rag/gleaner/cuda/emu"
)

// The encoder runs on the CUDA kernels (under host emulation, one OS
// thread per CUDA thread, hence graphs of up to 60 nodes and the configs
// with every op, and without the learned inputs) within the same bound of
// the float64 reference.
func TestEncoderOnCUDAKernels(t *testing.T) { checkEncoder(t, emu.New(), 60, "all", "paper inputs") }
