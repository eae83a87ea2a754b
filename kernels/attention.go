package kernels

import (
	"fmt"
	"math"
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
// copies its head's Q, K and Vᵀ into contiguous scratch and runs both
// products on the dot-product kernel (these matrices are too small for a
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
	parallelRows(pairs, a.Seq*a.Seq*a.HeadDim/64+1, func(lo, hi int) {
		w := newHeadScratch(a.Seq, a.HeadDim)
		for p := lo; p < hi; p++ {
			b, h := p/a.Heads, p%a.Heads
			if l := int(a.Lengths[b]); l > 0 {
				w.attend(a, b*a.Seq*hd+h*a.HeadDim, l, hd)
			}
		}
	})
	return nil
}

// headScratch holds one head's contiguous operands.
type headScratch struct {
	q, kt, v, s, o []float32
}

func newHeadScratch(seq, d int) *headScratch {
	return &headScratch{q: make([]float32, seq*d), kt: make([]float32, d*seq), v: make([]float32, seq*d),
		s: make([]float32, seq*seq), o: make([]float32, seq*d)}
}

// attend runs one head: S = Q·Kᵀ·scale, softmax, O = P·V, with Kᵀ and V
// copied out contiguously so both products are row-broadcast GEMMs.
func (w *headScratch) attend(a AttentionArgs, off, l, hd int) {
	d := a.HeadDim
	attnPack(a, w, off, l, hd, float32(1/math.Sqrt(float64(d))))
	s := w.s[:l*l]
	gemmNN(w.q[:l*d], w.kt[:d*l], s, l, l, d)
	softmaxNoMask(s, l, l)
	gemmNN(s, w.v[:l*d], w.o[:l*d], l, d, l)
	attnUnpack(a, w, off, l, hd)
}

// attnPack copies a head's l rows (starting at off, rows hd apart) into
// w: q scaled, kt transposed (d×l), v as is; attnUnpack copies w.o back.
// Versions in C replace both where the CPU allows.
var (
	attnPack   = attnPackGo
	attnUnpack = attnUnpackGo
)

func attnPackGo(a AttentionArgs, w *headScratch, off, l, hd int, scale float32) {
	d := a.HeadDim
	for i := 0; i < l; i++ {
		row := off + i*hd
		for j := 0; j < d; j++ {
			w.q[i*d+j] = a.Q[row+j] * scale
			w.kt[j*l+i] = a.K[row+j]
		}
		copy(w.v[i*d:(i+1)*d], a.V[row:row+d])
	}
}

func attnUnpackGo(a AttentionArgs, w *headScratch, off, l, hd int) {
	d := a.HeadDim
	for i := 0; i < l; i++ {
		copy(a.Out[off+i*hd:off+i*hd+d], w.o[i*d:(i+1)*d])
	}
}
