package kernels

import (
	"fmt"
	"runtime"

	"github.com/gleaner-rag/gleaner/engine"
)

// Activation is the engine's activation type (the contract defines it).
type Activation = engine.Activation

// Activations.
const (
	ActNone    = engine.ActNone
	ActGELU    = engine.ActGELU
	ActTanh    = engine.ActTanh
	ActReLU    = engine.ActReLU
	ActSigmoid = engine.ActSigmoid
)

// GemmArgs describes C = act(alpha·op(A)·op(B) + beta·C + bias) on
// row-major matrices: op(A) is M×K, op(B) is K×N, C is M×N, with leading
// dimensions LDA, LDB, LDC (0 means packed). Bias, when not nil, has N
// values added to every row.
type GemmArgs struct {
	TransA, TransB bool
	M, N, K        int
	Alpha, Beta    float32
	A              []float32
	LDA            int
	B              []float32
	LDB            int
	C              []float32
	LDC            int
	Bias           []float32
	Act            Activation
}

func (g *GemmArgs) fill() {
	if g.LDA == 0 {
		g.LDA = max(pick(g.TransA, g.M, g.K), 1)
	}
	if g.LDB == 0 {
		g.LDB = max(pick(g.TransB, g.K, g.N), 1)
	}
	if g.LDC == 0 {
		g.LDC = max(g.N, 1)
	}
}

// pick returns the packed leading dimension of a rows×cols matrix stored
// transposed or not.
func pick(trans bool, rows, cols int) int {
	if trans {
		return rows
	}
	return cols
}

// need is the minimum length of a matrix with r rows of leading dimension
// ld whose rows hold c values.
func need(r, c, ld int) int {
	if r == 0 || c == 0 {
		return 0
	}
	return (r-1)*ld + c
}

// Check validates shapes and lengths.
func (g *GemmArgs) Check() error {
	bias := -1
	if g.Bias != nil {
		bias = len(g.Bias)
	}
	return g.CheckLens(len(g.A), len(g.B), len(g.C), bias)
}

// CheckLens is Check for buffers of the given lengths (bias −1: none), for
// backends whose buffers are not host slices; it fills the packed leading
// dimensions as Check does.
func (g *GemmArgs) CheckLens(la, lb, lc, lbias int) error {
	g.fill()
	ar, ac := g.M, g.K
	if g.TransA {
		ar, ac = g.K, g.M
	}
	br, bc := g.K, g.N
	if g.TransB {
		br, bc = g.N, g.K
	}
	switch {
	case g.M < 0 || g.N < 0 || g.K < 0:
		return fmt.Errorf("kernels: gemm: negative shape %d×%d×%d", g.M, g.N, g.K)
	case g.LDA < max(ac, 1) || g.LDB < max(bc, 1) || g.LDC < max(g.N, 1):
		return fmt.Errorf("kernels: gemm: leading dimensions %d,%d,%d too small", g.LDA, g.LDB, g.LDC)
	case la < need(ar, ac, g.LDA) || lb < need(br, bc, g.LDB) || lc < need(g.M, g.N, g.LDC):
		return fmt.Errorf("kernels: gemm: buffers too short for %d×%d×%d", g.M, g.N, g.K)
	case lbias >= 0 && lbias < g.N:
		return fmt.Errorf("kernels: gemm: bias has %d values, want %d", lbias, g.N)
	}
	return nil
}

// Gemm computes g through the selected BLAS (OpenBLAS when its library is
// found at start-up, else gonum's pure-Go BLAS), then applies the bias and
// activation epilogue in one pass over C.
//
// Reference loop:
//
//	for i < M, j < N: s = Σ_k op(A)[i,k]·op(B)[k,j]
//	    C[i,j] = act(alpha·s + beta·C[i,j] + bias[j])
func Gemm(g GemmArgs) error { return gemm(g, nil) }

// GemmWithPacked is Gemm with op(B) already packed (PackB of g.B), run on
// the packed kernel: g must not transpose A and must have alpha 1.
func GemmWithPacked(g GemmArgs, pb *PackedB) error {
	if g.TransA || g.Alpha != 1 || pb == nil || pb.K != g.K || pb.N != g.N {
		return fmt.Errorf("kernels: packed gemm: needs A untransposed, alpha 1 and a packed %d×%d B", g.K, g.N)
	}
	return gemm(g, pb)
}

func gemm(g GemmArgs, pb *PackedB) error {
	if err := g.Check(); err != nil {
		return err
	}
	if g.M == 0 || g.N == 0 {
		return nil
	}
	bias, beta := g.Bias, g.Beta
	// The packed kernels add the bias inside each part, before the sums (a
	// serial pass seeding C first was 3–6 % of a MiniLM forward); they take
	// beta 0 or 1.
	packedBias := pb != nil && (beta == 0 || beta == 1)
	if g.K > 0 && bias != nil && !packedBias {
		// The product adds the bias (and beta·C) as it writes C: a second
		// pass over a C larger than the caches costs more than the product
		// (measured: 4096×384 output, 4.7 ms seeded, 6.2 ms with a pass
		// after; before GELU's pass, no slower).
		seedRows(g.C, g.M, g.N, g.LDC, beta, bias)
		bias, beta = nil, 1
	}
	switch {
	case g.K == 0:
		scaleC(&g)
	case pb != nil:
		if beta != 0 && beta != 1 {
			scaleC(&GemmArgs{M: g.M, N: g.N, C: g.C, LDC: g.LDC, Beta: beta})
		}
		if err := gemmPackedBias(g.A, g.LDA, g.M, pb, g.C, g.LDC, beta != 0, bias); err != nil {
			return err
		}
		bias = nil
	default:
		blas.sgemm(g.TransA, g.TransB, g.M, g.N, g.K, g.Alpha, g.A, g.LDA, g.B, g.LDB, beta, g.C, g.LDC)
	}
	if bias != nil || g.Act != ActNone {
		epilogue(g.C, g.M, g.N, g.LDC, bias, g.Act)
	}
	return nil
}

// seedRows sets each of the m rows of c (n values) to beta·c + bias; with
// beta 0 the old values are not read (they may be NaN, as BLAS allows).
func seedRows(c []float32, m, n, ldc int, beta float32, bias []float32) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			copy(row, bias[:n])
			continue
		}
		for j, b := range bias[:n] {
			row[j] = beta*row[j] + b
		}
	}
}

// scaleC sets C = beta·C: for K = 0, where BLAS libraries differ, and
// before the packed kernel, which only adds to C.
func scaleC(g *GemmArgs) {
	for i := 0; i < g.M; i++ {
		row := g.C[i*g.LDC : i*g.LDC+g.N]
		for j := range row {
			if g.Beta == 0 {
				row[j] = 0
			} else {
				row[j] *= g.Beta
			}
		}
	}
}

// BiasAct adds bias (n values, may be nil) to every row of the m×n matrix c
// (leading dimension ldc, 0 = packed) and applies act in place.
func BiasAct(c []float32, m, n, ldc int, bias []float32, act Activation) error {
	if ldc == 0 {
		ldc = n
	}
	if m < 0 || n < 0 || ldc < n || len(c) < need(m, n, ldc) || (bias != nil && len(bias) < n) {
		return fmt.Errorf("kernels: bias/activation: shapes do not match the buffers")
	}
	epilogue(c, m, n, ldc, bias, act)
	return nil
}

// epilogue adds bias and applies act to every row of C, in parallel over
// row ranges when C is large.
func epilogue(c []float32, m, n, ldc int, bias []float32, act Activation) {
	parallelRows(m, n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := c[i*ldc : i*ldc+n]
			if act == ActGELU {
				geluBiasRow(row, bias)
				continue
			}
			if bias != nil {
				for j := range row {
					row[j] += bias[j]
				}
			}
			activateSlice(act, row, row)
		}
	})
}

// parallelRows splits rows among cores when the work (rows×cols) is large
// enough to pay for goroutines.
func parallelRows(rows, cols int, fn func(lo, hi int)) {
	const minWork = 1 << 16
	w := min(runtime.GOMAXPROCS(0), rows, max(1, rows*cols/minWork))
	if w <= 1 {
		fn(0, rows)
		return
	}
	sections.run(w, func(k int) { fn(k*rows/w, (k+1)*rows/w) })
}

// BatchedGemm runs batch GEMMs whose A, B and C start strideA, strideB and
// strideC floats apart (a stride of 0 shares the operand), e.g. attention
// heads. g.A, g.B and g.C are the whole batched buffers.
func BatchedGemm(g GemmArgs, batch, strideA, strideB, strideC int) error {
	for i := 0; i < batch; i++ {
		gi := g
		gi.A = g.A[min(i*strideA, len(g.A)):]
		gi.B = g.B[min(i*strideB, len(g.B)):]
		gi.C = g.C[min(i*strideC, len(g.C)):]
		if err := Gemm(gi); err != nil {
			return fmt.Errorf("batch %d: %w", i, err)
		}
	}
	return nil
}
