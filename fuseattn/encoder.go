package fuseattn

import (
	"context"
	"fmt"

	"github.com/gleaner-rag/gleaner/models/lexical"
)

// EvidenceEncoder is E_φ: each text's token states (T_i × Dim, row-major).
// Implementations are safe for concurrent use; states depend on the text
// alone, so callers cache them by node (StateCache).
type EvidenceEncoder interface {
	Name() string
	Dim() int
	States(ctx context.Context, texts []string) ([][]float32, error)
}

// LSAStates is the embedded evidence encoder: a text's token states are the
// LSA term vectors (idf-weighted rows of V) of its analyzed terms, in
// order, skipping terms outside the LSA vocabulary, at most MaxTokens of
// them. It needs no model files, and the index's query vector lives in the
// same space.
type LSAStates struct {
	M         *lexical.LSA
	Terms     lexical.TermTable
	MaxTokens int
}

// Name implements EvidenceEncoder.
func (e *LSAStates) Name() string { return "lsa" }

// Dim implements EvidenceEncoder.
func (e *LSAStates) Dim() int { return e.M.Dims }

// States implements EvidenceEncoder. A text without any LSA term gets one
// zero state, so every node has at least one memory row.
func (e *LSAStates) States(ctx context.Context, texts []string) ([][]float32, error) {
	if e.M == nil || e.MaxTokens < 1 {
		return nil, fmt.Errorf("fuseattn: the LSA evidence encoder needs a model and MaxTokens ≥ 1")
	}
	d := e.M.Dims
	out := make([][]float32, len(texts))
	for i, text := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var h []float32
		for _, w := range lexical.Analyze(text) {
			if len(h) == e.MaxTokens*d {
				break
			}
			t := e.Terms.Lookup(w)
			if t < 0 || e.M.Row[t] < 0 {
				continue
			}
			r := int(e.M.Row[t])
			idf := e.M.IDF[r]
			for _, x := range e.M.V[r*d : (r+1)*d] {
				h = append(h, idf*x)
			}
		}
		if len(h) == 0 {
			h = make([]float32, d)
		}
		out[i] = h
	}
	return out, nil
}
