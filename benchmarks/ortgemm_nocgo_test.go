//go:build !cgo

package benchmarks

import "testing"

// ortGemm needs cgo (ONNX Runtime is a C library); without it the peer is
// absent, as when the library is not installed.
type ortGemm struct{}

func newOrtGemm(*testing.B, int, int, int, []float32, []float32) *ortGemm { return nil }

func (*ortGemm) run(*testing.B) {}

func (*ortGemm) close() {}
