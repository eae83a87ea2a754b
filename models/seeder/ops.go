package seeder

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/gleaner-rag/gleaner/kernels"
)

// gemm is C = op(A)·op(B) + beta·C on packed row-major matrices (op(A)
// m×k, op(B) k×n): float32 through the engine's CPU GEMM, float64 through
// gonum's BLAS.
func gemm[F Float](tA, tB bool, m, n, k int, a, b, c []F, beta F) {
	if m == 0 || n == 0 {
		return
	}
	lda, ldb := k, n
	if tA {
		lda = m
	}
	if tB {
		ldb = k
	}
	switch a32 := any(a).(type) {
	case []float32:
		if !tA && !tB && beta == 0 { // the forward's products: narrow, many rows
			if err := kernels.NarrowGemm(a32, any(b).([]float32), any(c).([]float32), m, n, k); err != nil {
				panic(err)
			}
			return
		}
		err := kernels.Gemm(kernels.GemmArgs{TransA: tA, TransB: tB, M: m, N: n, K: k, Alpha: 1, Beta: float32(beta),
			A: a32, LDA: lda, B: any(b).([]float32), LDB: ldb, C: any(c).([]float32), LDC: n})
		if err != nil {
			panic(err) // shapes are the model's own: a mismatch is a bug here
		}
	case []float64:
		blas64.Implementation().Dgemm(trans(tA), trans(tB), m, n, k, 1, a32, lda, any(b).([]float64), ldb, float64(beta), any(c).([]float64), n)
	}
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// addBias adds bias (cols values) to every row of x.
func addBias[F Float](x, bias []F, rows, cols int) {
	for i := 0; i < rows; i++ {
		row := x[i*cols : (i+1)*cols]
		for j := range row {
			row[j] += bias[j]
		}
	}
}

// sumRows accumulates the column sums of x into db (a bias gradient).
func sumRows[F Float](db, x []F, rows, cols int) {
	for i := 0; i < rows; i++ {
		for j, v := range x[i*cols : (i+1)*cols] {
			db[j] += v
		}
	}
}

// linear is y = x·W + b for rows×in x and in×out W.
func linear[F Float](x, w, b []F, rows, in, out int) []F {
	y := make([]F, rows*out)
	gemm(false, false, rows, out, in, x, w, y, 0)
	if b != nil {
		addBias(y, b, rows, out)
	}
	return y
}

// linearBack accumulates dW += xᵀ·dy and db += Σ dy, and returns dx =
// dy·Wᵀ when wantDX.
func linearBack[F Float](x, w, dy, dw, db []F, rows, in, out int, wantDX bool) []F {
	gemm(true, false, in, out, rows, x, dy, dw, 1)
	if db != nil {
		sumRows(db, dy, rows, out)
	}
	if !wantDX {
		return nil
	}
	dx := make([]F, rows*in)
	gemm(false, true, rows, in, out, dy, w, dx, 0)
	return dx
}

// lnEps is the LayerNorm epsilon (PyTorch's default).
const lnEps = 1e-5

// layerNorm normalises rows of x and keeps x̂ and 1/σ for the backward.
func layerNorm[F Float](x, g, b []F, rows, cols int) (y, xhat, inv []F) {
	y, xhat, inv = make([]F, len(x)), make([]F, len(x)), make([]F, rows)
	for i := 0; i < rows; i++ {
		r := x[i*cols : (i+1)*cols]
		var mean, ss float64
		for _, v := range r {
			mean += float64(v)
		}
		mean /= float64(cols)
		for _, v := range r {
			ss += (float64(v) - mean) * (float64(v) - mean)
		}
		s := 1 / math.Sqrt(ss/float64(cols)+lnEps)
		inv[i] = F(s)
		for j, v := range r {
			xh := F((float64(v) - mean) * s)
			xhat[i*cols+j] = xh
			y[i*cols+j] = xh*g[j] + b[j]
		}
	}
	return y, xhat, inv
}

// layerNormBack returns dx and accumulates dg, db.
func layerNormBack[F Float](dy, xhat, inv, g, dg, db []F, rows, cols int) []F {
	dx := make([]F, len(dy))
	n := F(cols)
	for i := 0; i < rows; i++ {
		var sum, dot F
		for j := 0; j < cols; j++ {
			p := i*cols + j
			dxh := dy[p] * g[j]
			sum += dxh
			dot += dxh * xhat[p]
			dg[j] += dy[p] * xhat[p]
			db[j] += dy[p]
		}
		for j := 0; j < cols; j++ {
			p := i*cols + j
			dx[p] = inv[i] / n * (n*dy[p]*g[j] - sum - xhat[p]*dot)
		}
	}
	return dx
}

func relu[F Float](x []F) {
	for i, v := range x {
		if v < 0 {
			x[i] = 0
		}
	}
}

// reluBack zeroes dy where the ReLU's output y was 0.
func reluBack[F Float](dy, y []F) {
	for i, v := range y {
		if v <= 0 {
			dy[i] = 0
		}
	}
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
