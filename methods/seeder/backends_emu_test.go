//go:build cgo && !purego

package seeder_test

import (
	"github.com/gleaner-rag/gleaner/cuda/emu"
	"github.com/gleaner-rag/gleaner/engine"
)

// otherBackends are the backends beside cpu that the tests run the
// encoder's engine ops on: here the CUDA kernels under host emulation.
func otherBackends() []engine.Backend { return []engine.Backend{emu.New()} }
