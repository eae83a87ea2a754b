package kerneltest

import (
	"math"

	"github.com/gleaner-rag/gleaner/engine"
)

// refGemm returns alpha·op(A)·op(B) + beta·C in float64 with the matching
// magnitude sums for tolerances.
func refGemm(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (val, mag []float64) {
	val, mag = make([]float64, m*n), make([]float64, m*n)
	at := func(i, p int) float64 {
		if ta {
			return float64(a[p*lda+i])
		}
		return float64(a[i*lda+p])
	}
	bt := func(p, j int) float64 {
		if tb {
			return float64(b[j*ldb+p])
		}
		return float64(b[p*ldb+j])
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, sa float64
			for p := 0; p < k; p++ {
				s += at(i, p) * bt(p, j)
				sa += math.Abs(at(i, p) * bt(p, j))
			}
			cij := 0.0
			if beta != 0 {
				cij = float64(beta) * float64(c[i*ldc+j])
			}
			val[i*n+j] = float64(alpha)*s + cij
			mag[i*n+j] = math.Abs(float64(alpha))*sa + math.Abs(cij)
		}
	}
	return val, mag
}

func dims(trans bool, r, c int) (int, int) {
	if trans {
		return c, r
	}
	return r, c
}

func testGemm(h *H) {
	for _, m := range Sizes {
		for _, n := range []int{1, 17, 129} {
			for _, k := range []int{1, 3, 129} {
				for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
					gemmCase(h, m, n, k, tr[0], tr[1], 1.5, 0, 0, engine.PrecisionF32)
				}
			}
		}
	}
	gemmCase(h, 17, 3, 17, false, false, -0.5, 0.25, 5, engine.PrecisionF32) // beta ≠ 0, padded leading dimensions
	gemmCase(h, 3, 17, 0, false, false, 1, 0.5, 0, engine.PrecisionF32)      // K = 0: C = beta·C
}

// testGemmPrecision: a Gemm allowed TF32 or bfloat16 inputs stays within
// (2u + u²)·Σ|a·b| of the exact product (u the format's unit roundoff)
// plus float32's summation bound; a float32 backend passes trivially.
func testGemmPrecision(h *H) {
	for _, p := range []engine.Precision{engine.PrecisionTF32, engine.PrecisionBF16} {
		for _, c := range [][3]int{{17, 33, 64}, {5, 3, 17}, {1, 3, 1}} {
			for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				gemmCase(h, c[0], c[1], c[2], tr[0], tr[1], 1.5, 0, 0, p)
			}
		}
		gemmCase(h, 17, 3, 17, false, false, -0.5, 0.25, 5, p)
	}
}

func gemmCase(h *H, m, n, k int, ta, tb bool, alpha, beta float32, pad int, p engine.Precision) {
	ar, ac := dims(ta, m, k)
	br, bc := dims(tb, k, n)
	lda, ldb, ldc := ac+pad, bc+pad, n+pad
	a, b := h.Rand(max(ar*lda, 1)), h.Rand(max(br*ldb, 1))
	c := h.Rand(m * ldc)
	var cb engine.Buffer
	if beta == 0 {
		cb = h.Poisoned(m * ldc)
	} else {
		cb = h.Up(c)
	}
	op := engine.GemmOp{TransA: ta, TransB: tb, M: m, N: n, K: k, Alpha: alpha, Beta: beta,
		A: h.Up(a), B: h.Up(b), C: cb, LDA: lda, LDB: ldb, LDC: ldc, Precision: p}
	h.Must(h.B.Gemm(op))
	got := h.Down(cb)
	want, mag := refGemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	packed := make([]float32, m*n)
	for i := 0; i < m; i++ {
		copy(packed[i*n:(i+1)*n], got[i*ldc:i*ldc+n])
	}
	tol := make([]float64, len(mag))
	u := 0.0
	if p != engine.PrecisionF32 {
		u = p.UnitRoundoff()
	}
	for i := range mag {
		tol[i] = Tol(k+1, mag[i]) + (2*u+u*u)*mag[i]
	}
	h.Close(name("gemm ", m, "×", n, "×", k, " ta=", ta, " tb=", tb, " beta=", beta, " pad=", pad, " ", p), packed, want, tol...)
}

func refAct(act engine.Activation, x float64) float64 {
	switch act {
	case engine.ActGELU:
		return 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
	case engine.ActTanh:
		return math.Tanh(x)
	case engine.ActReLU:
		return math.Max(x, 0)
	case engine.ActSigmoid:
		return 1 / (1 + math.Exp(-x))
	}
	return x
}

// allActs are the activations every epilogue and Activate must apply.
var allActs = []engine.Activation{engine.ActNone, engine.ActGELU, engine.ActTanh, engine.ActReLU, engine.ActSigmoid}

func testGemmEpilogue(h *H) {
	for _, act := range allActs {
		m, n, k := 17, 129, 3
		a, b, bias := h.Rand(m*k), h.Rand(k*n), h.Rand(n)
		c := h.Poisoned(m * n)
		h.Must(engine.GemmFused(h.B, engine.GemmOp{M: m, N: n, K: k, Alpha: 1, A: h.Up(a), B: h.Up(b), C: c, Bias: h.Up(bias), Act: act}))
		want, mag := refGemm(false, false, m, n, k, 1, a, k, b, n, 0, nil, n)
		tol := make([]float64, len(want))
		for i := range want {
			pre := want[i] + float64(bias[i%n])
			want[i] = refAct(act, pre)
			tol[i] = 2 * Tol(k+1, mag[i]+math.Abs(float64(bias[i%n])))
		}
		h.Close(name("gemm+bias+", act), h.Down(c), want, tol...)
	}
	testGemmResidualEpilogue(h)
}

// testGemmResidualEpilogue: a bias with beta ≠ 0 and a transposed B, as a
// transformer's residual sublayer computes C ← act(A·Bᵀ + beta·C + bias):
// the old C must be read, scaled once, and the bias added once.
func testGemmResidualEpilogue(h *H) {
	for _, act := range []engine.Activation{engine.ActNone, engine.ActGELU} {
		m, n, k := 9, 37, 19
		a, b, bias, c0 := h.Rand(m*k), h.Rand(n*k), h.Rand(n), h.Rand(m*n)
		c := h.Up(c0)
		h.Must(engine.GemmFused(h.B, engine.GemmOp{TransB: true, M: m, N: n, K: k, Alpha: 1, Beta: 0.5, A: h.Up(a), B: h.Up(b), C: c, Bias: h.Up(bias), Act: act}))
		want, mag := refGemm(false, true, m, n, k, 1, a, k, b, k, 0.5, c0, n)
		tol := make([]float64, len(want))
		for i := range want {
			want[i] = refAct(act, want[i]+float64(bias[i%n]))
			tol[i] = 2 * Tol(k+2, mag[i]+math.Abs(float64(bias[i%n])))
		}
		h.Close(name("gemm+residual+bias+", act), h.Down(c), want, tol...)
	}
}

func testBatchedGemm(h *H) {
	batch, m, n, k := 3, 17, 3, 129
	a, b := h.Rand(batch*m*k), h.Rand(k*n) // B shared (stride 0)
	c := h.Poisoned(batch * m * n)
	h.Must(h.B.BatchedGemm(engine.GemmOp{M: m, N: n, K: k, Alpha: 1, A: h.Up(a), B: h.Up(b), C: c}, batch, m*k, 0, m*n))
	got := h.Down(c)
	for i := 0; i < batch; i++ {
		want, mag := refGemm(false, false, m, n, k, 1, a[i*m*k:], k, b, n, 0, nil, n)
		tol := make([]float64, len(mag))
		for j := range mag {
			tol[j] = Tol(k, mag[j])
		}
		h.Close(name("batched gemm ", i), got[i*m*n:(i+1)*m*n], want, tol...)
	}
}

// testGemmBoundB: a GEMM whose B is a bound weight (engine.BindWeight,
// which a backend may repack: the cpu backend packs it for its AVX-512
// kernel): both layouts of B, an offset into the buffer, beta 0 (over a
// poisoned C), 1 and 0.5, a bias and GELU, a padded C, K past one block of
// 256, the same buffer reused (a cached copy) and read at a second shape
// (a second copy).
func testGemmBoundB(h *H) {
	m, n, k, off := 19, 70, 300, 5
	raw := h.Rand(off + n*k)
	bb, err := engine.BindWeight(h.B, raw)
	h.Must(err)
	for _, c := range []struct {
		n, k, padC int
		tb         bool
		beta       float32
		bias       bool
		act        engine.Activation
		repeat     int
	}{
		{n, k, 0, true, 0, false, engine.ActNone, 2},
		{n, k, 3, true, 1, true, engine.ActNone, 1},
		{n, k, 0, false, 0.5, true, engine.ActGELU, 1},
		{n / 2, 45, 2, true, 0, true, engine.ActNone, 1},
	} {
		ldb, ldc := c.n, c.n+c.padC
		if c.tb {
			ldb = c.k
		}
		a, bias, c0 := h.Rand(m*c.k), h.Rand(c.n), h.Rand(m*ldc)
		for r := 0; r < c.repeat; r++ {
			cb := h.Up(c0)
			if c.beta == 0 {
				cb = h.Poisoned(m * ldc)
			}
			op := engine.GemmOp{TransB: c.tb, M: m, N: c.n, K: c.k, Alpha: 1, Beta: c.beta, A: h.Up(a), B: bb, OffB: off, LDB: ldb, C: cb, LDC: ldc, Act: c.act}
			if c.bias {
				op.Bias = h.Up(bias)
			}
			h.Must(engine.GemmFused(h.B, op))
			want, mag := refGemm(false, c.tb, m, c.n, c.k, 1, a, c.k, raw[off:], ldb, c.beta, c0, ldc)
			tol := make([]float64, len(want))
			for i := range want {
				if c.bias {
					want[i] += float64(bias[i%c.n])
					mag[i] += math.Abs(float64(bias[i%c.n]))
				}
				want[i] = refAct(c.act, want[i])
				tol[i] = 2 * Tol(c.k+2, mag[i])
			}
			got := h.Down(cb)
			packed := make([]float32, m*c.n)
			for i := 0; i < m; i++ {
				copy(packed[i*c.n:(i+1)*c.n], got[i*ldc:i*ldc+c.n])
			}
			h.Close(name("gemm bound B ", m, "×", c.n, "×", c.k, " tb=", c.tb, " beta=", c.beta, " bias=", c.bias, " ", c.act, " run ", r), packed, want, tol...)
		}
	}
}
