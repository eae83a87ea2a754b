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
// real tokens: Out = softmax(Q·Kᵀ/√HeadDim)·V, with GEMMs on strided head
// views (no copies) and padding skipped entirely.
//
// Reference loop: for every (b, h, i < L): s_j = Σ_k Q[i,k]·K[j,k]/√d for
// j < L; p = softmax(s); Out[i,:] = Σ_j p_j·V[j,:]; rows i ≥ L are zero.
func Attention(a AttentionArgs) error {
	if err := a.Check(); err != nil {
		return err
	}
	hd := a.Heads * a.HeadDim
	clear(a.Out[:a.Batch*a.Seq*hd])
	scores := make([]float32, a.Seq*a.Seq)
	scale := float32(1 / math.Sqrt(float64(a.HeadDim)))
	for b := 0; b < a.Batch; b++ {
		l := int(a.Lengths[b])
		if l == 0 {
			continue
		}
		for h := 0; h < a.Heads; h++ {
			off := b*a.Seq*hd + h*a.HeadDim
			if err := attendHead(a, off, l, hd, scale, scores[:l*l]); err != nil {
				return err
			}
		}
	}
	return nil
}

func attendHead(a AttentionArgs, off, l, hd int, scale float32, s []float32) error {
	err := Gemm(GemmArgs{TransB: true, M: l, N: l, K: a.HeadDim, Alpha: scale,
		A: a.Q[off:], LDA: hd, B: a.K[off:], LDB: hd, C: s, LDC: l})
	if err != nil {
		return err
	}
	Softmax(s, nil, s, l, l)
	return Gemm(GemmArgs{M: l, N: a.HeadDim, K: l, Alpha: 1,
		A: s, LDA: l, B: a.V[off:], LDB: hd, C: a.Out[off:], LDC: hd})
}
