package kernels

import (
	"fmt"
	"runtime"
)

// packedPanel is how many columns of B one panel of a PackedB holds: two
// AVX-512 registers, the width of the packed kernel's tile.
const packedPanel = 32

// PackedB is the B operand of C = A·B (K×N) stored once in the layout the
// packed GEMM streams: panels of 32 columns, each K rows of 32 contiguous
// floats, the last panel zero-padded. A model's weights are constant, so
// packing them once saves the copy a BLAS makes inside every call (at a
// transformer's 128-row batch, a third of the call).
type PackedB struct {
	K, N int
	data []float32 // ⌈N/32⌉ panels × K × 32
}

// PackB packs op(B), K×N, from b with leading dimension ldb (transB: b
// holds N rows of K, as HuggingFace's out × in weights).
func PackB(b []float32, transB bool, k, n, ldb int) (*PackedB, error) {
	rows, cols := k, n
	if transB {
		rows, cols = n, k
	}
	if k <= 0 || n <= 0 || ldb < cols || len(b) < need(rows, cols, ldb) {
		return nil, fmt.Errorf("kernels: pack B: %d×%d (transposed %v, ld %d) does not fit %d values", k, n, transB, ldb, len(b))
	}
	panels := (n + packedPanel - 1) / packedPanel
	p := &PackedB{K: k, N: n, data: make([]float32, panels*k*packedPanel)}
	for j := 0; j < n; j++ {
		panel := p.data[(j/packedPanel)*k*packedPanel:]
		for kk := 0; kk < k; kk++ {
			if transB {
				panel[kk*packedPanel+j%packedPanel] = b[j*ldb+kk]
			} else {
				panel[kk*packedPanel+j%packedPanel] = b[kk*ldb+j]
			}
		}
	}
	return p, nil
}

// PackedGemmFast reports whether this CPU runs the packed GEMM in SIMD;
// without it a BLAS call is faster, and backends should not pack.
func PackedGemmFast() bool { return packedGemmFast }

var packedGemmFast bool

// GemmPacked computes C = A·B, or C += A·B when accumulate, for A (M×K,
// leading dimension lda) and a packed B, into C (M×N, ldc). Panels are
// spread over the cores when the product is large enough to pay for it.
// Every row of C is summed in the same order whatever M is, so a row's
// result does not depend on the rows batched with it.
//
// Reference loop: C[i,j] (+)= Σ_p A[i,p]·B[p,j], p ascending within blocks
// of packedKC.
func GemmPacked(a []float32, lda, m int, pb *PackedB, c []float32, ldc int, accumulate bool) error {
	return gemmPackedBias(a, lda, m, pb, c, ldc, accumulate, nil)
}

// gemmPackedBias is GemmPacked that also adds bias (nil, or N values) to
// every row of C: C = bias (+ C) + A·B, the bias added to C before the
// product's sums, as a separate pass would, but inside each part's panels
// (in registers where the kernel can), so no serial pass over C comes
// first.
func gemmPackedBias(a []float32, lda, m int, pb *PackedB, c []float32, ldc int, accumulate bool, bias []float32) error {
	k, n := pb.K, pb.N
	if k <= 0 || n <= 0 || len(pb.data) < (n+packedPanel-1)/packedPanel*k*packedPanel {
		return fmt.Errorf("kernels: packed gemm: B is not a PackB result (K %d, N %d, %d values)", k, n, len(pb.data))
	}
	if m < 0 || lda < k || ldc < n || len(a) < need(m, k, lda) || len(c) < need(m, n, ldc) {
		return fmt.Errorf("kernels: packed gemm: %d×%d×%d (ld %d, %d) does not fit A (%d) or C (%d)", m, n, k, lda, ldc, len(a), len(c))
	}
	if bias != nil && len(bias) < n {
		return fmt.Errorf("kernels: packed gemm: bias holds %d values, want %d", len(bias), n)
	}
	if m == 0 {
		return nil
	}
	p := &packedProduct{a: a, lda: lda, m: m, k: k, data: pb.data, n: n, c: c, ldc: ldc, accumulate: accumulate, bias: bias}
	panels := (n + packedPanel - 1) / packedPanel
	const minWork = 1 << 20 // multiply-adds per worker
	w := min(runtime.GOMAXPROCS(0), panels, max(1, m*n*k/minWork))
	if w <= 1 {
		gemmPackedPanels(p, 0, panels)
		return nil
	}
	if m*n*k >= threadsMinWork && gemmPackedThreads != nil {
		ran := false
		sections.aside(func() { ran = gemmPackedThreads(p, panels, w) })
		if ran {
			return nil
		}
	}
	sections.run(w, func(t int) { gemmPackedPanels(p, t*panels/w, (t+1)*panels/w) })
	return nil
}

// packedProduct is one call of the packed kernels: C (m×n, ldc) =
// bias (+ C when accumulate) + A (m×k, lda) · B (data, packed).
type packedProduct struct {
	a          []float32
	lda, m, k  int
	data       []float32
	n          int
	c          []float32
	ldc        int
	accumulate bool
	bias       []float32 // nil or n values
}

// threadsMinWork is the fewest multiply-adds for which GemmPacked runs its
// parts on the C side's workers (gemmPackedThreads, kernels/cthreads.h)
// rather than on the Go pool. A pool part is one cgo call of hundreds of
// microseconds or more; with every P in such a call, the runtime's monitor
// takes a P back each section, wakes a thread to look for work and keeps
// to its shortest sleep: over the same products the process switched
// context 44–60 k times on the pool against 4 k on C threads. The C
// workers are kept between products (started on first use, polling
// briefly, then asleep). On the 2-core AVX2 VM, paired against a thread
// started per part per product from 2^27: 1.06–1.38× faster at 56–75 M
// multiply-adds (128×384×1152, 128×384×1536, 128×1536×384, 128×768×768),
// 1.0–1.07× at 302 M; at 19 M (128×384×384) the Go pool was faster
// (0.90–0.94×), so such products stay on it.
var threadsMinWork = 1 << 25

// gemmPackedThreads runs panels [0, panels) of C in parts on the C side's
// workers and reports whether it ran: not when another product holds the
// workers, and never where the panels kernel is Go (nil).
var gemmPackedThreads func(p *packedProduct, panels, parts int) bool

// cWorkers reaches into the pool behind gemmPackedThreads, for the tests.
var cWorkers cWorkersHooks

type cWorkersHooks struct {
	started func() int // workers running
	hold    func(bool) // take the pool as another product would, or let it go: on one locked OS thread
}

// packedKC and packedMC block K and M so a panel's slice of B (32×256
// floats, 32 KiB) stays in L1 and the rows' slice of A (256×256, 256 KiB)
// in L2 while they are multiplied.
const (
	packedKC = 256
	packedMC = 256
)

// gemmPackedPanels computes panels [p0, p1) of C; a SIMD version replaces
// it where the CPU allows (gemmPackedImpls lists each, for the tests).
var gemmPackedPanels = gemmPackedPanelsGo

// work bounds-checks a call of a C panels kernel over panels [p0, p1),
// which reads a, data, c and bias through raw pointers, and reports
// whether it has work and whether it accumulates, as the C int the
// kernels take.
func (p *packedProduct) work(p0, p1 int) (ok bool, acc int) {
	if p.m == 0 || p0 >= p1 {
		return false, 0
	}
	_, _, _ = p.a[(p.m-1)*p.lda+p.k-1], p.data[p1*p.k*packedPanel-1], p.c[(p.m-1)*p.ldc+p.n-1]
	if p.bias != nil {
		_ = p.bias[p.n-1]
	}
	if p.accumulate {
		acc = 1
	}
	return true, acc
}

var gemmPackedImpls = map[string]func(p *packedProduct, p0, p1 int){"go": gemmPackedPanelsGo}

// seedBias adds the bias to panels [p0, p1) of C, or sets them to it when
// the product does not accumulate, and reports whether the sums must then
// accumulate: for kernels that do not start their sums from the bias.
func (p *packedProduct) seedBias(p0, p1 int) bool {
	if p.bias == nil {
		return p.accumulate
	}
	j0, j1 := p0*packedPanel, min(p.n, p1*packedPanel)
	for i := 0; i < p.m; i++ {
		row := p.c[i*p.ldc+j0 : i*p.ldc+j1]
		if !p.accumulate {
			copy(row, p.bias[j0:j1])
			continue
		}
		for j, b := range p.bias[j0:j1] {
			row[j] += b
		}
	}
	return true
}

func gemmPackedPanelsGo(pp *packedProduct, p0, p1 int) {
	if pp.m == 0 || p0 >= p1 { // seedBias would slice C backwards
		return
	}
	a, lda, m, k, data, n, c, ldc := pp.a, pp.lda, pp.m, pp.k, pp.data, pp.n, pp.c, pp.ldc
	accumulate := pp.seedBias(p0, p1)
	for ib := 0; ib < m; ib += packedMC {
		ie := min(m, ib+packedMC)
		for kb := 0; kb < k; kb += packedKC {
			ke := min(k, kb+packedKC)
			first := kb == 0 && !accumulate
			for p := p0; p < p1; p++ {
				j0 := p * packedPanel
				nc := min(packedPanel, n-j0)
				panel := data[p*k*packedPanel:]
				for i := ib; i < ie; i++ {
					row := c[i*ldc+j0 : i*ldc+j0+nc]
					var acc [packedPanel]float32
					if !first {
						copy(acc[:nc], row)
					}
					for kk := kb; kk < ke; kk++ {
						av := a[i*lda+kk]
						bp := panel[kk*packedPanel : kk*packedPanel+nc]
						for j, bv := range bp {
							acc[j] += av * bv
						}
					}
					copy(row, acc[:nc])
				}
			}
		}
	}
}
