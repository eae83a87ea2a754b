package kernels

// gemmNN computes C (m×n) = A (m×k)·B (k×n) for small row-major matrices
// whose rows start lda, ldb and ldc floats apart (an attention head's rows
// inside the [seq, heads·dim] activations), single-threaded (callers
// parallelise over many of them, e.g. attention heads). A SIMD version
// replaces it at start-up where the CPU allows.
//
// Reference loop: C[i,j] = Σ_p A[i,p]·B[p,j].
var gemmNN = gemmNNGo

// gemmNNImpls and softmaxImpls list every implementation this CPU can run,
// by name, so tests compare each with the reference.
var (
	gemmNNImpls  = map[string]func(a, b, c []float32, m, n, k, lda, ldb, ldc int){"go": gemmNNGo}
	softmaxImpls = map[string]func(x []float32, rows, cols int){"go": softmaxNoMaskGo}
)

func gemmNNGo(a, b, c []float32, m, n, k, lda, ldb, ldc int) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		clear(row)
		for p := 0; p < k; p++ {
			axpy(a[i*lda+p], b[p*ldb:p*ldb+n], row)
		}
	}
}

// gemmNNNeedsKernel does what the SIMD gemmNN wrappers share before their
// C call: it reports false when the product is empty (clearing C when only
// k is 0), and checks that the strides stay inside the slices, so the C
// code cannot read or write past them.
func gemmNNNeedsKernel(a, b, c []float32, m, n, k, lda, ldb, ldc int) bool {
	if m == 0 || n == 0 {
		return false
	}
	if k == 0 {
		for i := 0; i < m; i++ {
			clear(c[i*ldc : i*ldc+n])
		}
		return false
	}
	_, _, _ = a[(m-1)*lda+k-1], b[(k-1)*ldb+n-1], c[(m-1)*ldc+n-1]
	return true
}

// softmaxNoMask normalises rows in place without a mask, single-threaded;
// a SIMD version (vectorised exp) replaces it where the CPU allows.
var softmaxNoMask = softmaxNoMaskGo

func softmaxNoMaskGo(x []float32, rows, cols int) {
	for i := 0; i < rows; i++ {
		softmaxRow(x[i*cols:(i+1)*cols], nil, x[i*cols:(i+1)*cols])
	}
}
