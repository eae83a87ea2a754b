package index

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// ErrEmptyEmbedding is returned when the embedder finds nothing to
// represent in the query (for LSA: no query term is in its vocabulary).
var ErrEmptyEmbedding = errors.New("index: the query embeds to the zero vector (no known term)")

// EmbedQuery embeds query text with the index's embedder. The vector is
// normalised for cosine indexes.
func (ix *Index) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	if ix.Embedder == nil {
		return nil, fmt.Errorf("index %s: vectors come from embedder %q; pass its model folder (--bi-encoder) or, in Go, open the index with index.OpenWith", ix.Dir, ix.Meta.Embedder)
	}
	v, err := ix.Embedder.Embed(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	if len(v) != ix.Meta.Dims {
		return nil, fmt.Errorf("index: embedder %s returned %d values, want %d", ix.Embedder.Name(), len(v), ix.Meta.Dims)
	}
	return ix.prepare(v)
}

// PrepareQueryVector checks a user-supplied query vector against the index
// and normalises it for cosine indexes.
func (ix *Index) PrepareQueryVector(v []float32) ([]float32, error) {
	if len(v) != ix.Meta.Dims {
		return nil, fmt.Errorf("index: query vector has %d dimensions, the index has %d", len(v), ix.Meta.Dims)
	}
	return ix.prepare(append([]float32(nil), v...))
}

func (ix *Index) prepare(v []float32) ([]float32, error) {
	for j, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("index: query vector value %d is %v", j, x)
		}
	}
	if ix.Meta.Metric == MetricCosine && !normalize(v) {
		return v, ErrEmptyEmbedding
	}
	return v, nil
}
