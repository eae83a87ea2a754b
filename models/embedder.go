package models

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/gleaner-rag/gleaner/corpus"
)

// Embedder turns texts into dense vectors. The index uses one to embed
// nodes at build time and queries at query time; implementations must be
// safe for concurrent use and deterministic.
//
// Implementations: lexical.LSAEmbedder (the embedded default, fitted at
// index time), Precomputed (vectors the user brings), and the ONNX
// bi-encoders of the models issue.
type Embedder interface {
	// Name identifies the embedder; it is recorded in the index.
	Name() string
	// Dim is the vector length.
	Dim() int
	// Embed returns len(texts) vectors, row-major. A text the embedder
	// cannot represent (e.g. no known term) yields a zero row.
	Embed(ctx context.Context, texts []string) ([]float32, error)
}

// ErrCannotEmbedText is returned by embedders that cannot embed free text.
var ErrCannotEmbedText = errors.New("this embedder cannot embed text: its vectors were precomputed; pass query vectors instead (--query-vectors)")

// Precomputed stands for vectors made outside gleaner: nodes come from a
// file at index time, and queries must arrive as vectors.
type Precomputed struct{ D int }

// Name implements Embedder.
func (Precomputed) Name() string { return "precomputed" }

// Dim implements Embedder.
func (p Precomputed) Dim() int { return p.D }

// Embed always fails with ErrCannotEmbedText.
func (Precomputed) Embed(context.Context, []string) ([]float32, error) {
	return nil, ErrCannotEmbedText
}

// CheckFinite reports the first NaN or infinite value of a row-major
// matrix of rows of length d.
func CheckFinite(v []float32, d int) error {
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("row %d, column %d: %w", i/d, i%d, corpus.ErrNotFinite)
		}
	}
	return nil
}
