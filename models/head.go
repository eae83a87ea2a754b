package models

import (
	"errors"
	"fmt"
	"math"
)

// Head is a sequence-classification head as BERT/XLM-R rerankers carry
// (docs/methods.md §1.2): score = out·tanh(Dense·h + DenseB) + OutB, applied to
// a latent h of length In. GRanker smooths latents before this head.
type Head struct {
	In, Hidden int
	Dense      []float32 // Hidden × In, row-major
	DenseB     []float32 // Hidden
	Out        []float32 // Hidden
	OutB       float32
}

// Validate checks the shapes and that every parameter is finite.
func (h *Head) Validate() error {
	if h.In <= 0 || h.Hidden <= 0 || len(h.Dense) != h.In*h.Hidden || len(h.DenseB) != h.Hidden || len(h.Out) != h.Hidden {
		return fmt.Errorf("models: head shapes do not match In=%d Hidden=%d", h.In, h.Hidden)
	}
	for _, s := range [][]float32{h.Dense, h.DenseB, h.Out, {h.OutB}} {
		for _, x := range s {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return errors.New("models: head has a NaN or infinite parameter")
			}
		}
	}
	return nil
}

// Score computes the scores of n latents (row-major n × In) into out.
//
// Reference loop: for each row, z_j = tanh(Σ_k Dense[j,k]·h_k + DenseB_j),
// score = Σ_j Out_j·z_j + OutB (float64 accumulation).
func (h *Head) Score(H []float32, n int, out []float32) error {
	if len(H) < n*h.In || len(out) < n {
		return fmt.Errorf("models: head: %d latents of %d need %d values", n, h.In, n*h.In)
	}
	for i := 0; i < n; i++ {
		row := H[i*h.In : (i+1)*h.In]
		s := float64(h.OutB)
		for j := 0; j < h.Hidden; j++ {
			z := float64(h.DenseB[j])
			for k, x := range row {
				z += float64(h.Dense[j*h.In+k]) * float64(x)
			}
			s += float64(h.Out[j]) * math.Tanh(z)
		}
		out[i] = float32(s)
	}
	return nil
}
