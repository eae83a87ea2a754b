// Package ort runs ONNX encoders with ONNX Runtime through
// github.com/yalue/onnxruntime_go. The shared library comes from the npm
// package onnxruntime-node (`make ort-lib` unpacks it into
// .deps/onnxruntime/); GLEANER_ORT_LIB overrides the path. A missing library
// is a clear error, never a download at run time. ONNX Runtime is an
// optional accelerator: it needs cgo, and a build without cgo
// (CGO_ENABLED=0) has every call fail with ErrNoCgo.
package ort

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// EnvLib names the environment variable that points at libonnxruntime.so.1.
const EnvLib = "GLEANER_ORT_LIB"

// DefaultLib is where `make ort-lib` puts the library, relative to the
// repository root.
const DefaultLib = ".deps/onnxruntime/libonnxruntime.so.1"

// ErrNoCgo is the error of every session call in a build without cgo.
var ErrNoCgo = errors.New("ort: this gleaner was built without cgo (CGO_ENABLED=0), and ONNX Runtime needs it: build with cgo (make build), or run the model natively (model.safetensors, --runtime native)")

// LibraryPath finds the shared library: $GLEANER_ORT_LIB, else DefaultLib
// in the working directory or one of its parents.
func LibraryPath() (string, error) {
	if p := os.Getenv(EnvLib); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("ort: %s=%s: %w", EnvLib, p, err)
		}
		return p, nil
	}
	dir, _ := os.Getwd()
	for dir != "" {
		p := filepath.Join(dir, DefaultLib)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", errors.New("ort: ONNX Runtime library not found: run `make ort-lib` (it unpacks libonnxruntime.so.1 from the npm package onnxruntime-node into .deps/onnxruntime/) or set " + EnvLib)
}
