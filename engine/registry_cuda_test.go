//go:build cuda

package engine_test

import "testing"

// checkCUDANotBuilt has nothing to check in a -tags cuda build (the
// backend is real; cuda's own tests run it).
func checkCUDANotBuilt(*testing.T) {}
