//go:build cgo && !purego

package retrieve_test

import (
	"github.com/gleaner-rag/gleaner/cuda/emu"
	"github.com/gleaner-rag/gleaner/engine"
)

// otherBackends are the backends beside cpu that tests run engine-op
// methods on: here the CUDA kernels under host emulation.
func otherBackends() []engine.Backend { return []engine.Backend{emu.New()} }
