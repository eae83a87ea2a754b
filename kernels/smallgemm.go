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

// softmaxNoMask normalises rows in place without a mask, single-threaded;
// a SIMD version (vectorised exp) replaces it where the CPU allows.
var softmaxNoMask = softmaxNoMaskGo

func softmaxNoMaskGo(x []float32, rows, cols int) {
	for i := 0; i < rows; i++ {
		softmaxRow(x[i*cols:(i+1)*cols], nil, x[i*cols:(i+1)*cols])
	}
}
