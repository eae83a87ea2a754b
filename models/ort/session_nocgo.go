//go:build !cgo

package ort

// Init fails: ONNX Runtime needs cgo.
func Init() error { return ErrNoCgo }

// Session is an ONNX Runtime session; without cgo none can be opened.
type Session struct{}

// Open fails with ErrNoCgo.
func Open(string, ...string) (*Session, error) { return nil, ErrNoCgo }

// OpenIO fails with ErrNoCgo.
func OpenIO(string, []string, []string) (*Session, error) { return nil, ErrNoCgo }

// Close does nothing.
func (*Session) Close() error { return nil }

// Run fails with ErrNoCgo.
func (*Session) Run([][]int32, [][]int32, int32) ([][]float32, int, error) { return nil, 0, ErrNoCgo }

// RunInt64 fails with ErrNoCgo.
func (*Session) RunInt64([]int64, ...[]int64) ([][]float32, error) { return nil, ErrNoCgo }
