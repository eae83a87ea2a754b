package index

import (
	"errors"
	"fmt"
	"math"

	"github.com/gleaner-rag/gleaner/models/lexical"
)

// ErrNoTextEmbedder is returned when the index's vectors were precomputed
// and a query comes as text without a vector.
var ErrNoTextEmbedder = errors.New("index: vectors were precomputed; pass query vectors (--query-vectors) to use vector search")

// ErrEmptyEmbedding is returned when no query term is in the LSA vocabulary.
var ErrEmptyEmbedding = errors.New("index: no query term is in the LSA vocabulary")

// EmbedQuery embeds query text with the index's embedder.
func (ix *Index) EmbedQuery(text string) ([]float32, error) {
	if ix.LSA == nil {
		return nil, ErrNoTextEmbedder
	}
	out := make([]float32, ix.Meta.Dims)
	if !ix.LSA.EmbedTerms(ix.Postings.Terms, lexical.Analyze(text), out) {
		return out, ErrEmptyEmbedding
	}
	return out, nil
}

// PrepareQueryVector checks a user-supplied query vector against the index
// and normalises it for cosine indexes.
func (ix *Index) PrepareQueryVector(v []float32) ([]float32, error) {
	if len(v) != ix.Meta.Dims {
		return nil, fmt.Errorf("index: query vector has %d dimensions, the index has %d", len(v), ix.Meta.Dims)
	}
	out := append([]float32(nil), v...)
	for j, x := range out {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("index: query vector value %d is %v", j, x)
		}
	}
	if ix.Meta.Metric == MetricCosine && !normalize(out) {
		return nil, errors.New("index: query vector is all zeros")
	}
	return out, nil
}
