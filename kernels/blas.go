package kernels

import "gonum.org/v1/gonum/blas/gonum"

// sgemmer is the single-precision GEMM of one BLAS library, row-major.
type sgemmer interface {
	sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
	name() string
}

// blas is chosen at start-up: OpenBLAS when its shared library loads (see
// blas_openblas.go), else gonum's pure-Go BLAS.
var blas sgemmer = gonumBLAS{}

// BLASImpl names the BLAS in use, e.g. "openblas (libopenblas.so.0, SkylakeX
// kernels)" or "gonum".
func BLASImpl() string { return blas.name() }

type gonumBLAS struct{}

func (gonumBLAS) name() string { return "gonum" }

func (gonumBLAS) sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gonum.Implementation{}.Sgemm(trans(transA), trans(transB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// GonumSgemm calls gonum's pure-Go Sgemm directly (for benchmarks).
func GonumSgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gonumBLAS{}.sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
