//go:build !cgo || purego

package kernels

// OpenBLASSgemm reports false: this build has no OpenBLAS path.
func OpenBLASSgemm(bool, bool, int, int, int, float32, []float32, int, []float32, int, float32, []float32, int) bool {
	return false
}
