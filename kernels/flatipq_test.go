package kernels

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
)

// dequantized is m's float32 matrix, as the quantized kernels read it.
func dequantized(m *QuantRows) []float32 {
	out := make([]float32, m.N*m.D)
	for i := range out {
		if m.Kind == engine.QuantBF16 {
			out[i] = FromBF16(m.BF16[i])
		} else {
			out[i] = m.Scale[i/m.D] * float32(m.I8[i])
		}
	}
	return out
}

func TestQuantizeErrorBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	n, d := 40, 37
	X := randMat(rng, n*d)
	copy(X[5*d:6*d], make([]float32, d)) // a zero row
	for j := 0; j < d; j++ {             // a row so small that 127/max overflows float32
		X[7*d+j] = float32(j%3-1) * 1e-38
	}
	X[9*d], X[9*d+1] = math.MaxFloat32, -math.MaxFloat32 // past the largest bfloat16
	for _, kind := range engine.QuantKinds() {
		m, err := Quantize(X, n, d, kind)
		if err != nil {
			t.Fatal(err)
		}
		back := dequantized(m)
		for i, v := range X {
			if kind == engine.QuantInt8 && i/d == 9 {
				continue // its scale × 127 overflows float32, as the float32 row's own scores would
			}
			var bound float64
			if kind == engine.QuantBF16 {
				bound = math.Abs(float64(v)) * math.Pow(2, -8) // half a unit of 7 stored mantissa bits
				if math.IsInf(float64(back[i]), 0) {
					t.Fatalf("value %d (%v) became %v", i, v, back[i])
				}
			} else {
				bound = float64(m.Scale[i/d])/2 + 1e-7
			}
			if math.Abs(float64(back[i]-v)) > bound {
				t.Fatalf("%s: value %d is %v, quantized %v (bound %g)", kind, i, v, back[i], bound)
			}
		}
		if kind == engine.QuantInt8 && m.Scale[5] != 0 {
			t.Fatalf("a zero row has scale %v", m.Scale[5])
		}
	}
}

func TestBF16RoundsToNearestEven(t *testing.T) {
	for _, c := range []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f807fff, 0x3f80}, // below half: down
		{0x3f808000, 0x3f80}, // half, even below: down
		{0x3f818000, 0x3f82}, // half, odd below: up
		{0x3f808001, 0x3f81}, // above half: up
		{0xbf808001, 0xbf81}, // negative, by magnitude
		{0x7f7fffff, 0x7f7f}, // the largest float32: saturates, not infinity
		{0xff7f8000, 0xff7f},
	} {
		if got := BF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("BF16(%#x) = %#x, want %#x", c.in, got, c.want)
		}
	}
}

func TestQuantizeRefusesBadInput(t *testing.T) {
	if _, err := Quantize([]float32{1, float32(math.NaN())}, 1, 2, engine.QuantInt8); err == nil {
		t.Fatal("NaN accepted")
	}
	if _, err := Quantize([]float32{1, 2, 3}, 2, 2, engine.QuantBF16); err == nil {
		t.Fatal("short matrix accepted")
	}
	if _, err := Quantize([]float32{1, 2}, 1, 2, "int4"); err == nil {
		t.Fatal("unknown kind accepted")
	}
}

// TestDotBlockQuantizedMatchesReference checks every implementation of both
// kernels against the float64 reference over the dequantized values, and
// that a query scores the same alone and in a batch.
func TestDotBlockQuantizedMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 2))
	for name, impl := range dotQImpls {
		for _, d := range []int{1, 7, 8, 9, 33, 384} {
			for _, rows := range []int{1, 3, 8, 13} {
				for _, nq := range []int{1, 2, 3, 4, 5, 6, 7} {
					X, Q := randMat(rng, rows*d), randMat(rng, nq*d)
					for _, kind := range engine.QuantKinds() {
						m, err := Quantize(X, rows, d, kind)
						if err != nil {
							t.Fatal(err)
						}
						out, alone := make([]float32, nq*rows), make([]float32, rows)
						if kind == engine.QuantBF16 {
							impl.bf16(m.BF16, rows, d, Q, nq, out)
						} else {
							impl.i8(m.I8, rows, d, Q, nq, out)
							m.Scale = make([]float32, rows) // the kernel sums raw codes
							for r := range m.Scale {
								m.Scale[r] = 1
							}
						}
						back := dequantized(m)
						for q := 0; q < nq; q++ {
							if kind == engine.QuantBF16 {
								impl.bf16(m.BF16, rows, d, Q[q*d:(q+1)*d], 1, alone)
							} else {
								impl.i8(m.I8, rows, d, Q[q*d:(q+1)*d], 1, alone)
							}
							for r := 0; r < rows; r++ {
								var ref, mag float64
								for j := 0; j < d; j++ {
									p := float64(back[r*d+j]) * float64(Q[q*d+j])
									ref, mag = ref+p, mag+math.Abs(p)
								}
								got := out[q*rows+r]
								// float32 sums of d exact products: error ≤ d·2⁻²⁴·Σ|x·q|.
								if tol := float64(d) * math.Pow(2, -24) * mag; math.Abs(float64(got)-ref) > tol+1e-30 {
									t.Fatalf("%s %s d=%d rows=%d nq=%d: [%d,%d] = %v, reference %v", name, kind, d, rows, nq, q, r, got, ref)
								}
								if alone[r] != got {
									t.Fatalf("%s %s d=%d: query %d row %d scores %v alone, %v in a batch of %d", name, kind, d, q, r, alone[r], got, nq)
								}
							}
						}
					}
				}
			}
		}
	}
}

// eachDotQImpl runs fn with every quantized implementation selected.
func eachDotQImpl(t *testing.T, fn func(t *testing.T)) {
	si8, sbf, ssi8, ssbf := dotBlockI8, dotBlockBF16, scanTopI8, scanTopBF16
	defer func() { dotBlockI8, dotBlockBF16, scanTopI8, scanTopBF16 = si8, sbf, ssi8, ssbf }()
	for name, impl := range dotQImpls {
		dotBlockI8, dotBlockBF16, scanTopI8, scanTopBF16 = impl.i8, impl.bf16, impl.scanI8, impl.scanBF16
		t.Run(name, fn)
	}
}

// TestFlatIPQuantizedScanInCEqualsBlocks checks the quantized scan in C
// against the block loop in Go, hit for hit, on rows with many exact ties,
// over batches up to the last one scanned in registers.
func TestFlatIPQuantizedScanInCEqualsBlocks(t *testing.T) {
	eachDotQImpl(t, func(t *testing.T) {
		if scanTopI8 == nil {
			t.Skip("no scan in C")
		}
		rng := rand.New(rand.NewPCG(27, 7))
		n, d := 5000, 24
		distinct := randMat(rng, 900*d)
		X := make([]float32, n*d)
		for r, src := range rng.Perm(n) {
			copy(X[r*d:(r+1)*d], distinct[(src%900)*d:(src%900+1)*d])
		}
		Q := randMat(rng, widenMinBatch*d)
		for _, kind := range engine.QuantKinds() {
			m, err := Quantize(X, n, d, kind)
			if err != nil {
				t.Fatal(err)
			}
			for _, nq := range []int{1, 3, widenMinBatch - 1, widenMinBatch} {
				for _, k := range []int{1, 10, n} {
					for _, workers := range []int{1, 3} {
						got, err := FlatIPQuantized(context.Background(), m, Q, nq, k, workers)
						if err != nil {
							t.Fatal(err)
						}
						want, err := flatScan(context.Background(), n, k, workers, Q, nq, func() blockScorer { return quantScorer(m, nq) })
						if err != nil {
							t.Fatal(err)
						}
						for q := range want {
							if len(got[q]) != len(want[q]) {
								t.Fatalf("%s nq=%d k=%d workers=%d query %d: %d hits, want %d", kind, nq, k, workers, q, len(got[q]), len(want[q]))
							}
							for i := range want[q] {
								if got[q][i] != want[q][i] {
									t.Fatalf("%s nq=%d k=%d workers=%d query %d rank %d: %+v, want %+v", kind, nq, k, workers, q, i, got[q][i], want[q][i])
								}
							}
						}
					}
				}
			}
		}
	})
}

func TestFlatIPQuantizedMatchesReference(t *testing.T) {
	eachDotQImpl(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(23, 3))
		for _, n := range []int{1, 17, 300, 1000} {
			for _, d := range []int{3, 8, 65} {
				X, Q := randMat(rng, n*d), randMat(rng, 3*d)
				for _, kind := range engine.QuantKinds() {
					m, err := Quantize(X, n, d, kind)
					if err != nil {
						t.Fatal(err)
					}
					got, err := FlatIPQuantized(context.Background(), m, Q, 3, 10, 3)
					if err != nil {
						t.Fatal(err)
					}
					back := dequantized(m)
					for q := 0; q < 3; q++ {
						checkHits(t, n, d, q, got[q], refFlat(back, n, d, Q[q*d:(q+1)*d], 10), 4e-5*float64(d))
					}
				}
			}
		}
	})
}

// TestSearchQuantizedIsExactWithEveryCandidate checks the rescoring: with
// every row a candidate the answer is FlatIP's, bit for bit.
func TestSearchQuantizedIsExactWithEveryCandidate(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 4))
	n, d, nq := 700, 48, 4
	X, Q := randMat(rng, n*d), randMat(rng, nq*d)
	want, err := FlatIP(context.Background(), X, n, d, Q, nq, 10, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range engine.QuantKinds() {
		m, err := Quantize(X, n, d, kind)
		if err != nil {
			t.Fatal(err)
		}
		got, err := SearchQuantized(context.Background(), m, X, Q, nq, 10, n, 2)
		if err != nil {
			t.Fatal(err)
		}
		for q := range want {
			if len(got[q]) != len(want[q]) {
				t.Fatalf("%s query %d: %d hits, want %d", kind, q, len(got[q]), len(want[q]))
			}
			for i := range want[q] {
				if got[q][i] != want[q][i] {
					t.Fatalf("%s query %d rank %d: %v, FlatIP %v", kind, q, i, got[q][i], want[q][i])
				}
			}
		}
	}
}

// TestSearchQuantizedRecall checks that a few candidates per hit find the
// exact top 10 on unit vectors (the index's cosine rows), and that every
// reported score is the exact one.
func TestSearchQuantizedRecall(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 5))
	n, d, nq, k := 5000, 64, 20, 10
	X, Q := randMat(rng, n*d), randMat(rng, nq*d)
	for r := 0; r < n; r++ {
		normalize(X[r*d : (r+1)*d])
	}
	want, err := FlatIP(context.Background(), X, n, d, Q, nq, k, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range engine.QuantKinds() {
		m, err := Quantize(X, n, d, kind)
		if err != nil {
			t.Fatal(err)
		}
		got, err := SearchQuantized(context.Background(), m, X, Q, nq, k, 4*k, 2)
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for q := range want {
			exact := map[int32]float32{}
			for _, h := range want[q] {
				exact[h.Index] = h.Score
			}
			for _, h := range got[q] {
				if s, ok := exact[h.Index]; ok {
					found++
					if s != h.Score {
						t.Fatalf("%s: row %d scored %v, exact %v", kind, h.Index, h.Score, s)
					}
				}
			}
		}
		if recall := float64(found) / float64(nq*k); recall < 0.99 {
			t.Fatalf("%s: recall@%d %.3f with %d candidates", kind, k, recall, 4*k)
		}
	}
}

func normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / math.Sqrt(s))
	}
}

func TestQuantizedSearchRefusesBadArguments(t *testing.T) {
	m, err := Quantize(make([]float32, 8), 2, 4, engine.QuantInt8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FlatIPQuantized(context.Background(), m, make([]float32, 3), 1, 1, 1); err == nil {
		t.Fatal("short query accepted")
	}
	if _, err := SearchQuantized(context.Background(), m, make([]float32, 4), make([]float32, 4), 1, 1, 4, 1); err == nil {
		t.Fatal("float32 matrix of another shape accepted")
	}
	m.Scale = m.Scale[:1]
	if _, err := FlatIPQuantized(context.Background(), m, make([]float32, 4), 1, 1, 1); err == nil {
		t.Fatal("missing scales accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	big, _ := Quantize(make([]float32, 1000*4), 1000, 4, engine.QuantBF16)
	if _, err := FlatIPQuantized(ctx, big, make([]float32, 4), 1, 1, 1); err == nil {
		t.Fatal("cancelled context ignored")
	}
}

// TestQuantizedScoresIndependentOfBatch checks, for each implementation,
// that a query's quantized scores are the same alone (in-register
// kernels) and in a batch large enough to widen blocks to float32.
func TestQuantizedScoresIndependentOfBatch(t *testing.T) {
	sf, si8, sbf, ssi8, ssbf := dotBlock, dotBlockI8, dotBlockBF16, scanTopI8, scanTopBF16
	defer func() { dotBlock, dotBlockI8, dotBlockBF16, scanTopI8, scanTopBF16 = sf, si8, sbf, ssi8, ssbf }()
	rng := rand.New(rand.NewPCG(26, 6))
	for _, d := range []int{7, 45, 64} {
		n, nq := 600, widenMinBatch+1
		X, Q := randMat(rng, n*d), randMat(rng, nq*d)
		for name, q := range dotQImpls {
			dotBlock, dotBlockI8, dotBlockBF16, scanTopI8, scanTopBF16 = dotImpls[name], q.i8, q.bf16, q.scanI8, q.scanBF16
			for _, kind := range engine.QuantKinds() {
				m, err := Quantize(X, n, d, kind)
				if err != nil {
					t.Fatal(err)
				}
				batch, err := FlatIPQuantized(context.Background(), m, Q, nq, n, 2)
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < nq; i += 7 {
					alone, err := FlatIPQuantized(context.Background(), m, Q[i*d:(i+1)*d], 1, n, 2)
					if err != nil {
						t.Fatal(err)
					}
					for r := range alone[0] {
						if alone[0][r] != batch[i][r] {
							t.Fatalf("%s %s d=%d query %d rank %d: %v alone, %v in a batch of %d", name, kind, d, i, r, alone[0][r], batch[i][r], nq)
						}
					}
				}
			}
		}
	}
}

// TestScoreCodesMatchesReference: ScoreCodes is each row's scale times its
// codes' dot product with q, within float32 summation error of a float64
// reference, on every implementation, and refuses mismatched shapes.
func TestScoreCodesMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 3))
	eachDotQImpl(t, func(t *testing.T) {
		for _, d := range []int{1, 9, 256} {
			for _, rows := range []int{0, 1, 5, 17} {
				X, q := randMat(rng, rows*d), randMat(rng, d)
				m, err := Quantize(X, rows, d, engine.QuantInt8)
				if err != nil {
					t.Fatal(err)
				}
				out := make([]float32, rows)
				ScoreCodes(m.I8, m.Scale, d, q, out)
				for r := range rows {
					var ref, mag float64
					for j := range d {
						p := float64(m.I8[r*d+j]) * float64(q[j])
						ref, mag = ref+p, mag+math.Abs(p)
					}
					s := float64(m.Scale[r])
					// d float32 sums, then one product: ≤ (d+1)·2⁻²⁴·Σ|c·q|·scale.
					if tol := float64(d+1) * math.Pow(2, -24) * mag * s; math.Abs(float64(out[r])-ref*s) > tol+1e-30 {
						t.Fatalf("d=%d row %d of %d: %v, reference %v", d, r, rows, out[r], ref*s)
					}
				}
			}
		}
	})
	defer func() {
		if recover() == nil {
			t.Fatal("a short code matrix was accepted")
		}
	}()
	ScoreCodes(make([]int8, 7), make([]float32, 2), 4, make([]float32, 4), make([]float32, 2))
}
