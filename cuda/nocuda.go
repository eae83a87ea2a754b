//go:build !cuda

package cuda

// Without the cuda tag, this file registers a "cuda" backend whose
// constructor explains how to get the real one, so selecting it is a clear
// error rather than a silent fallback to the CPU.

import (
	"errors"

	"github.com/gleaner-rag/gleaner/engine"
)

// ErrNotBuilt is returned when the cuda backend is selected in a build
// without the cuda tag.
var ErrNotBuilt = errors.New("this gleaner was built without CUDA: rebuild with `go build -tags cuda` where the CUDA toolkit is installed (make cuda-check installs Debian's); such a build cannot train heads, so train them with a default build")

func init() {
	engine.Register(Name, func() (engine.Backend, error) { return nil, ErrNotBuilt })
}

// Open opens GPU ordinal as a backend; without the cuda tag it returns
// ErrNotBuilt.
func Open(ordinal int) (engine.Backend, error) { return nil, ErrNotBuilt }
