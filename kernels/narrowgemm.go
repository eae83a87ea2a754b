package kernels

import "fmt"

// NarrowGemm computes C (m×n) = A (m×k)·B (k×n) on packed row-major
// matrices where n and k are a layer's width (tens to hundreds) and m is
// many rows (a graph's nodes): blocks of rows run in parallel through the
// register-blocked small GEMM, which for such shapes beats a general BLAS
// call's packing and threading overhead.
//
// Reference loop: C[i,j] = Σ_p A[i,p]·B[p,j], accumulated in float64.
func NarrowGemm(a, b, c []float32, m, n, k int) error {
	if m < 0 || n < 0 || k < 0 || len(a) < m*k || len(b) < k*n || len(c) < m*n {
		return fmt.Errorf("kernels: narrow gemm: %d×%d·%d×%d needs buffers of %d, %d, %d; got %d, %d, %d", m, k, k, n, m*k, k*n, m*n, len(a), len(b), len(c))
	}
	parallelRows(m, n*k, func(lo, hi int) {
		gemmNN(a[lo*k:hi*k], b[:k*n], c[lo*n:hi*n], hi-lo, n, k, k, n, n)
	})
	return nil
}
