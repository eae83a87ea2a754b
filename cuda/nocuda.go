//go:build !cuda

// Package cuda is gleaner's CUDA backend. Its kernels and the
// gorgonia.org/cu launches live behind the `cuda` build tag, because
// gorgonia.org/cu exits the process at init on machines without a GPU.
// Without the tag, this file registers a "cuda" backend whose constructor
// explains how to get the real one, so selecting it is a clear error rather
// than a silent fallback to the CPU.
package cuda

import (
	"errors"

	"github.com/gleaner-rag/gleaner/engine"
)

// ErrNotBuilt is returned when the cuda backend is selected in a build
// without the cuda tag.
var ErrNotBuilt = errors.New("this gleaner was built without CUDA: rebuild with `go build -tags cuda` on a machine with the CUDA toolkit")

func init() {
	engine.Register("cuda", func() (engine.Backend, error) { return nil, ErrNotBuilt })
}
