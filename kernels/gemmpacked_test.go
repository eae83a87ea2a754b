package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestGemmPackedMatchesReference checks every packed-GEMM kernel against a
// float64 product, B packed from both layouts, on shapes that hit full and
// partial tiles (rows past multiples of 8 and of 6, columns past 16 and 32, k past a
// block of 256), strided A and C (whose padding must stay untouched), and
// both C = A·B and C += A·B. Tolerance: (k+1)·2⁻²³·(Σ|a·b| + |C₀|).
func TestGemmPackedMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for name, impl := range gemmPackedImpls {
		for _, s := range [][3]int{{1, 1, 1}, {8, 32, 16}, {9, 33, 7}, {4, 16, 5}, {10, 17, 257}, {17, 64, 300}, {3, 95, 513}, {260, 40, 20}} {
			m, n, k := s[0], s[1], s[2]
			for _, transB := range []bool{false, true} {
				ldb := n + 2
				if transB {
					ldb = k + 2
				}
				rows := k
				if transB {
					rows = n
				}
				b := randSlice(rng, rows*ldb)
				pb, err := PackB(b, transB, k, n, ldb)
				if err != nil {
					t.Fatal(err)
				}
				for _, accumulate := range []bool{false, true} {
					lda, ldc := k+1, n+3
					a, c := randSlice(rng, m*lda), randSlice(rng, m*ldc)
					c0 := append([]float32(nil), c...)
					panels := (n + packedPanel - 1) / packedPanel
					impl(&packedProduct{a: a, lda: lda, m: m, k: k, data: pb.data, n: n, c: c, ldc: ldc, accumulate: accumulate}, 0, panels)
					for i := 0; i < m; i++ {
						for j := 0; j < ldc; j++ {
							got := c[i*ldc+j]
							if j >= n {
								if got != c0[i*ldc+j] {
									t.Fatalf("%s: wrote C's padding at [%d,%d]", name, i, j)
								}
								continue
							}
							var want, mag float64
							if accumulate {
								want, mag = float64(c0[i*ldc+j]), math.Abs(float64(c0[i*ldc+j]))
							}
							for p := 0; p < k; p++ {
								var bv float32
								if transB {
									bv = b[j*ldb+p]
								} else {
									bv = b[p*ldb+j]
								}
								want += float64(a[i*lda+p]) * float64(bv)
								mag += math.Abs(float64(a[i*lda+p]) * float64(bv))
							}
							if d := math.Abs(float64(got) - want); !(d <= float64(k+1)*0x1p-23*mag) {
								t.Fatalf("%s %d×%d×%d transB=%v acc=%v: C[%d,%d] = %g, want %g", name, m, n, k, transB, accumulate, i, j, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// TestGemmPackedRowsIndependentOfBatch: a row's result is bit-identical
// whether it is multiplied alone or among 300 rows, split over workers.
func TestGemmPackedRowsIndependentOfBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	m, n, k := 300, 200, 700
	a, b := randSlice(rng, m*k), randSlice(rng, n*k)
	pb, err := PackB(b, true, k, n, k)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]float32, m*n)
	if err := GemmPacked(a, k, m, pb, all, n, false); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 7, 8, 299} {
		one := make([]float32, n)
		if err := GemmPacked(a[i*k:(i+1)*k], k, 1, pb, one, n, false); err != nil {
			t.Fatal(err)
		}
		for j := range one {
			if one[j] != all[i*n+j] {
				t.Fatalf("row %d col %d: %v alone, %v in the batch", i, j, one[j], all[i*n+j])
			}
		}
	}
}

// TestPackBRejectsShortInput: a B too short for its shape is an error.
func TestPackBRejectsShortInput(t *testing.T) {
	if _, err := PackB(make([]float32, 10), false, 4, 3, 3); err == nil {
		t.Fatal("packed a 4×3 B from 10 values")
	}
	if _, err := PackB(make([]float32, 12), true, 4, 3, 3); err == nil {
		t.Fatal("accepted ldb 3 < k 4 for a transposed B")
	}
}

// TestGemmPackedThreadsMatchesPanels: the product run in parts on C
// threads equals, bit for bit, the panels kernel run once over every panel
// (each panel is summed by the same kernel either way), C's padding
// untouched, for part counts that split panels unevenly or leave parts
// empty, or past CT_MAX_PARTS (clamped to it); one part runs nothing and
// says so. GemmPacked takes the threads at any size while threadsMinWork is
// 0 (where there are two cores to split over).
func TestGemmPackedThreadsMatchesPanels(t *testing.T) {
	if gemmPackedThreads == nil {
		t.Skip("no C panels kernel on this CPU")
	}
	rng := rand.New(rand.NewPCG(11, 11))
	for _, s := range [][3]int{{1, 33, 5}, {13, 200, 300}, {128, 96, 257}} {
		m, n, k := s[0], s[1], s[2]
		pb, err := PackB(randSlice(rng, k*n), false, k, n, n)
		if err != nil {
			t.Fatal(err)
		}
		panels := (n + packedPanel - 1) / packedPanel
		lda, ldc := k+1, n+3
		a := randSlice(rng, m*lda)
		for _, accumulate := range []bool{false, true} {
			c0 := randSlice(rng, m*ldc)
			want := append([]float32(nil), c0...)
			gemmPackedPanels(&packedProduct{a: a, lda: lda, m: m, k: k, data: pb.data, n: n, c: want, ldc: ldc, accumulate: accumulate}, 0, panels)
			for _, parts := range []int{2, 3, 7, panels + 2, 65} {
				got := append([]float32(nil), c0...)
				if !gemmPackedThreads(&packedProduct{a: a, lda: lda, m: m, k: k, data: pb.data, n: n, c: got, ldc: ldc, accumulate: accumulate}, panels, parts) {
					t.Fatalf("%d×%d×%d in %d parts: did not run", m, n, k, parts)
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%d×%d×%d acc=%v in %d parts: C[%d] = %v, the panels kernel %v", m, n, k, accumulate, parts, i, got[i], want[i])
					}
				}
			}
		}
		if gemmPackedThreads(&packedProduct{a: a, lda: lda, m: m, k: k, data: pb.data, n: n, c: make([]float32, m*ldc), ldc: ldc}, panels, 1) {
			t.Fatal("ran in 1 part: ct_run starts threads for 2 or more")
		}
	}
	defer func(w int, f func(*packedProduct, int, int) bool) {
		threadsMinWork, gemmPackedThreads = w, f
	}(threadsMinWork, gemmPackedThreads)
	inner, calls := gemmPackedThreads, 0
	gemmPackedThreads = func(p *packedProduct, panels, parts int) bool {
		calls++
		return inner(p, panels, parts)
	}
	threadsMinWork = 0
	m, n, k := 128, 100, 200 // 2.56 M multiply-adds: two parts (GemmPacked's minWork)
	a := randSlice(rng, m*k)
	pb, err := PackB(randSlice(rng, n*k), true, k, n, k)
	if err != nil {
		t.Fatal(err)
	}
	want, got := make([]float32, m*n), make([]float32, m*n)
	gemmPackedPanels(&packedProduct{a: a, lda: k, m: m, k: k, data: pb.data, n: n, c: want, ldc: n}, 0, (n+packedPanel-1)/packedPanel)
	if err := GemmPacked(a, k, m, pb, got, n, false); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("GemmPacked on threads: C[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if runtime.GOMAXPROCS(0) >= 2 && calls != 1 {
		t.Fatalf("GemmPacked called the C threads %d times, want 1", calls)
	}
}

// packedCase is one product for the C workers' tests, with the panels
// kernel's answer.
type packedCase struct {
	a, c0, want     []float32
	pb              *PackedB
	m, n, k, panels int
}

func newPackedCase(t *testing.T, rng *rand.Rand, m, n, k int) packedCase {
	t.Helper()
	pb, err := PackB(randSlice(rng, k*n), false, k, n, n)
	if err != nil {
		t.Fatal(err)
	}
	p := packedCase{a: randSlice(rng, m*k), c0: randSlice(rng, m*n), pb: pb, m: m, n: n, k: k, panels: (n + packedPanel - 1) / packedPanel}
	p.want = append([]float32(nil), p.c0...)
	gemmPackedPanels(&packedProduct{a: p.a, lda: k, m: m, k: k, data: pb.data, n: n, c: p.want, ldc: n, accumulate: true}, 0, p.panels)
	return p
}

// run gives the product to the C workers in parts; C is nil when they were
// busy (and must then be untouched).
func (p packedCase) run(t *testing.T, parts int) []float32 {
	got := append([]float32(nil), p.c0...)
	if !gemmPackedThreads(&packedProduct{a: p.a, lda: p.k, m: p.m, k: p.k, data: p.pb.data, n: p.n, c: got, ldc: p.n, accumulate: true}, p.panels, parts) {
		for i := range got {
			if got[i] != p.c0[i] {
				t.Errorf("%d parts: refused, yet C[%d] changed", parts, i)
				return nil
			}
		}
		return nil
	}
	return got
}

// within runs fn on a goroutine of its own and fails the test with fn's
// message, or with late when fn has not returned in a minute: C code that
// waits forever cannot be stopped, but the test need not wait with it.
func within(t *testing.T, late string, fn func() string) {
	t.Helper()
	done := make(chan string, 1)
	go func() { done <- fn() }()
	select {
	case msg := <-done:
		if msg != "" {
			t.Fatal(msg)
		}
	case <-time.After(time.Minute):
		t.Fatal(late)
	}
}

// diff says where got differs from the panels kernel's answer, or "".
func (p packedCase) diff(got []float32) string {
	for i := range got {
		if got[i] != p.want[i] {
			return fmt.Sprintf("C[%d] = %v, the panels kernel %v", i, got[i], p.want[i])
		}
	}
	return ""
}

// TestCThreadsWorkersKeptAcrossProducts: the C workers, kept from one
// product to the next, run every part of every product exactly once
// (a part run twice accumulates twice into C; one skipped leaves it short),
// as the part count changes between products and after the workers have
// gone to sleep (CT_SPIN_NS is 50 µs; the test pauses 2 ms); the pool
// starts no worker after the first 8-part product. A lost wake-up would
// hang the product: the test fails after a minute instead.
func TestCThreadsWorkersKeptAcrossProducts(t *testing.T) {
	if gemmPackedThreads == nil {
		t.Skip("no C panels kernel on this CPU")
	}
	p := newPackedCase(t, rand.New(rand.NewPCG(12, 12)), 37, 300, 70)
	within(t, "a product on the C workers has not returned in a minute: a worker missed its part", func() string {
		if p.run(t, 8) == nil {
			return "the workers were busy with no other product running"
		}
		kept := cWorkers.started()
		if kept < 7 {
			return fmt.Sprintf("%d workers after an 8-part product", kept)
		}
		for i, parts := range []int{2, 3, 5, 2, 4, 7, 2, 2, 3, 6, 2, 5, 4, 3, 2, 8, 2, 3, 2, 2} {
			if i%3 == 2 {
				time.Sleep(2 * time.Millisecond)
			}
			got := p.run(t, parts)
			if got == nil {
				return fmt.Sprintf("product %d (%d parts): refused with no other product running", i, parts)
			}
			if msg := p.diff(got); msg != "" {
				return fmt.Sprintf("product %d (%d parts): %s", i, parts, msg)
			}
		}
		if n := cWorkers.started(); n != kept {
			return fmt.Sprintf("%d workers after the products, %d before: one was started per product", n, kept)
		}
		return ""
	})
}

// TestCThreadsBusyWorkersRefuse: a product given to the C workers while
// another holds them is refused with C untouched, and GemmPacked then
// runs it on the Go pool, correctly; products from several goroutines at
// once either run whole on the C workers or are refused untouched.
func TestCThreadsBusyWorkersRefuse(t *testing.T) {
	if gemmPackedThreads == nil {
		t.Skip("no C panels kernel on this CPU")
	}
	p := newPackedCase(t, rand.New(rand.NewPCG(13, 13)), 64, 256, 300)
	defer func(w int) { threadsMinWork = w }(threadsMinWork)
	threadsMinWork = 0
	gemmPacked := func() string {
		got := append([]float32(nil), p.c0...)
		if err := GemmPacked(p.a, p.k, p.m, p.pb, got, p.n, true); err != nil {
			return err.Error()
		}
		return p.diff(got)
	}
	within(t, "a product waited a minute for the C workers instead of being refused", func() string {
		runtime.LockOSThread() // the pool's mutex is let go by the thread that took it
		defer runtime.UnlockOSThread()
		cWorkers.hold(true)
		got := p.run(t, 2)
		msg := gemmPacked()
		cWorkers.hold(false)
		if got != nil {
			return "ran on the C workers while another product held them"
		}
		if msg != "" {
			return "GemmPacked with the C workers held: " + msg
		}
		return ""
	})
	if p.run(t, 2) == nil {
		t.Fatal("refused once the C workers were let go")
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				if got := p.run(t, 2+i%3); got != nil {
					if msg := p.diff(got); msg != "" {
						t.Errorf("concurrent product: %s", msg)
						return
					}
				}
				if msg := gemmPacked(); msg != "" {
					t.Errorf("concurrent GemmPacked: %s", msg)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestGemmPackedBiasEqualsSeeded: every packed kernel, and the C workers,
// given a bias, leave C bit-identical to seeding C with the bias first
// (C = bias, or C += bias when accumulating, as gemm did before) and then
// accumulating the product by the same kernel; C's padding (NaN where C
// is not accumulated) stays untouched. Shapes end in partial halves and
// panels and span two blocks of k and of rows.
func TestGemmPackedBiasEqualsSeeded(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 14))
	impls := map[string]func(p *packedProduct, p0, p1 int){}
	for name, impl := range gemmPackedImpls {
		impls[name] = impl
	}
	if gemmPackedThreads != nil {
		impls["threads"] = func(p *packedProduct, p0, p1 int) {
			if !gemmPackedThreads(p, p1, 3) {
				t.Fatal("the C workers refused with nothing else running")
			}
		}
	}
	for name, impl := range impls {
		for _, s := range [][3]int{{7, 9, 300}, {13, 40, 257}, {6, 16, 5}, {1, 70, 33}, {300, 40, 300}, {1030, 40, 33}} {
			m, n, k := s[0], s[1], s[2]
			pb, err := PackB(randSlice(rng, k*n), false, k, n, n)
			if err != nil {
				t.Fatal(err)
			}
			panels := (n + packedPanel - 1) / packedPanel
			lda, ldc := k+2, n+5
			a, bias := randSlice(rng, m*lda), randSlice(rng, n)
			for _, accumulate := range []bool{false, true} {
				c0 := randSlice(rng, m*ldc)
				if !accumulate { // C = bias + A·B must not read C, which BLAS lets hold NaN
					for i := range c0 {
						c0[i] = float32(math.NaN())
					}
				}
				want := append([]float32(nil), c0...)
				beta := float32(0)
				if accumulate {
					beta = 1
				}
				seedRows(want, m, n, ldc, beta, bias)
				impl(&packedProduct{a: a, lda: lda, m: m, k: k, data: pb.data, n: n, c: want, ldc: ldc, accumulate: true}, 0, panels)
				got := append([]float32(nil), c0...)
				impl(&packedProduct{a: a, lda: lda, m: m, k: k, data: pb.data, n: n, c: got, ldc: ldc, accumulate: accumulate, bias: bias}, 0, panels)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s %d×%d×%d acc=%v: C[%d,%d] = %v, seeded %v", name, m, n, k, accumulate, i/ldc, i%ldc, got[i], want[i])
					}
				}
			}
		}
	}
}
