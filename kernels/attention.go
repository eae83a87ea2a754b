package kernels

import (
	"fmt"
	"math"
	"sync"
)

// AttentionArgs describes scaled-dot self-attention over a padded batch of
// short sequences (encoder self-attention). Q, K, V and Out are
// [Batch, Seq, Heads·HeadDim] row-major; Lengths[b] is the number of real
// tokens of sequence b. Keys at positions ≥ Lengths[b] are masked, and the
// output rows of padding positions are zero.
type AttentionArgs struct {
	Batch, Seq, Heads, HeadDim int
	Q, K, V, Out               []float32
	Lengths                    []int32
}

// Check validates shapes.
func (a *AttentionArgs) Check() error {
	n := a.Batch * a.Seq * a.Heads * a.HeadDim
	switch {
	case a.Batch < 0 || a.Seq < 0 || a.Heads <= 0 || a.HeadDim <= 0:
		return fmt.Errorf("kernels: attention: bad shape %d×%d×%d×%d", a.Batch, a.Seq, a.Heads, a.HeadDim)
	case len(a.Q) < n || len(a.K) < n || len(a.V) < n || len(a.Out) < n || len(a.Lengths) < a.Batch:
		return fmt.Errorf("kernels: attention: buffers too short")
	}
	for b, l := range a.Lengths[:a.Batch] {
		if l < 0 || int(l) > a.Seq {
			return fmt.Errorf("kernels: attention: length %d of sequence %d outside [0,%d]", l, b, a.Seq)
		}
	}
	return nil
}

// Attention computes, for each sequence b and head h, over the L = Lengths[b]
// real tokens: Out = softmax(Q·Kᵀ/√HeadDim)·V, with padding skipped
// entirely. The (sequence, head) pairs are spread over the cores; each
// copies its head's Kᵀ, scaled, into contiguous scratch and runs both
// products on the small-GEMM kernel, reading Q and V and writing Out in
// place through their row stride (these matrices are too small for a
// threaded BLAS call to pay off).
//
// Reference loop: for every (b, h, i < L): s_j = Σ_k Q[i,k]·K[j,k]/√d for
// j < L; p = softmax(s); Out[i,:] = Σ_j p_j·V[j,:]; rows i ≥ L are zero.
func Attention(a AttentionArgs) error {
	if err := a.Check(); err != nil {
		return err
	}
	hd := a.Heads * a.HeadDim
	clear(a.Out[:a.Batch*a.Seq*hd])
	pairs := a.Batch * a.Heads
	// A pair's work is its two products, 2·Seq²·HeadDim multiply-adds.
	parallelRows(pairs, 2*a.Seq*a.Seq*a.HeadDim, func(lo, hi int) {
		w := getHeadScratch(a.Seq, a.HeadDim)
		defer headScratchPool.Put(w)
		for p := lo; p < hi; p++ {
			b, h := p/a.Heads, p%a.Heads
			if l := int(a.Lengths[b]); l > 0 {
				w.attend(a, b*a.Seq*hd+h*a.HeadDim, l, hd)
			}
		}
	})
	return nil
}

// headScratch holds one head's scaled Kᵀ and its scores.
type headScratch struct {
	kt, s []float32
}

func newHeadScratch(seq, d int) *headScratch {
	return &headScratch{kt: make([]float32, d*seq), s: make([]float32, seq*seq)}
}

// headScratchPool reuses scratch across calls: a transformer calls
// Attention once per layer, and fresh 100 KB buffers each time cost more in
// allocation and collection than a 12-head, 128-token call computes.
var headScratchPool sync.Pool

// getHeadScratch returns pooled scratch large enough for seq × d, or new.
func getHeadScratch(seq, d int) *headScratch {
	if w, ok := headScratchPool.Get().(*headScratch); ok && len(w.kt) >= d*seq && len(w.s) >= seq*seq {
		return w
	}
	return newHeadScratch(seq, d)
}

// attend runs one head whose rows start at off, hd floats apart:
// S = Q·(Kᵀ·scale), softmax, Out = P·V, both products row-broadcast GEMMs.
func (w *headScratch) attend(a AttentionArgs, off, l, hd int) {
	d := a.HeadDim
	kt, s := w.kt[:d*l], w.s[:l*l]
	packKT(a.K[off:off+(l-1)*hd+d], kt, l, d, hd, float32(1/math.Sqrt(float64(d))))
	gemmNN(a.Q[off:], kt, s, l, l, d, hd, l, l)
	softmaxNoMask(s, l, l)
	gemmNN(s, a.V[off:], a.Out[off:], l, d, l, l, hd, hd)
}

// packKT writes kt (d×l) = scale·Kᵀ for the l rows of k, hd floats apart;
// a version in C replaces it where the CPU allows.
var packKT = packKTGo

func packKTGo(k, kt []float32, l, d, hd int, scale float32) {
	for i := 0; i < l; i++ {
		for j, v := range k[i*hd : i*hd+d] {
			kt[j*l+i] = v * scale
		}
	}
}
