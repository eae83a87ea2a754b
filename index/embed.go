package index

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/internal/progress"
	"github.com/gleaner-rag/gleaner/models"
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

// NodeText is what BM25 and LSA see for node i: its title, then its text
// (IndexText).
func (ix *Index) NodeText(i int) string {
	if t := ix.Title(i); t != "" {
		return t + "\n" + ix.Text(i)
	}
	return ix.Text(i)
}

// CanEmbedText refuses an index whose embedder cannot embed new text (what
// names the text, for the error).
func (ix *Index) CanEmbedText(what string) error {
	switch {
	case ix.Meta.Embedder == EmbedderPrecomputed:
		return fmt.Errorf("index %s: %s need a text embedder, and this index's vectors were precomputed; build the index with LSA or --bi-encoder", ix.Dir, what)
	case ix.Embedder == nil:
		return fmt.Errorf("index %s: its vectors come from embedder %q, which %s also need: pass its model folder (--bi-encoder) or, in Go, the embedder", ix.Dir, ix.Meta.Embedder, what)
	}
	return nil
}

// EmbedTexts embeds texts with the index's embedder in batches, normalising
// rows for cosine (a text with no known term stays a zero row); what names
// them in progress and errors.
func (ix *Index) EmbedTexts(ctx context.Context, what string, texts []string, p progress.Reporter) ([]float32, error) {
	if err := ix.CanEmbedText(what); err != nil {
		return nil, err
	}
	d := ix.Meta.Dims
	out := make([]float32, 0, len(texts)*d)
	p.Stage("embed "+what, len(texts))
	defer p.Finish()
	for lo := 0; lo < len(texts); lo += 512 {
		hi := min(lo+512, len(texts))
		v, err := ix.Embedder.Embed(ctx, texts[lo:hi])
		if err != nil {
			return nil, fmt.Errorf("index: embedding %s %d–%d with %s: %w", what, lo, hi-1, ix.Embedder.Name(), err)
		}
		if len(v) != (hi-lo)*d {
			return nil, fmt.Errorf("index: embedder %s returned %d values for %d %s of %d dims", ix.Embedder.Name(), len(v), hi-lo, what, d)
		}
		if err := models.CheckFinite(v, d); err != nil {
			return nil, fmt.Errorf("index: embedder %s, %s from %d: %w", ix.Embedder.Name(), what, lo, err)
		}
		for i := 0; i < hi-lo; i++ {
			normalize(v[i*d : (i+1)*d])
		}
		out = append(out, v...)
		p.Set(hi)
	}
	return out, nil
}

// OpenWithEmbedder opens the index at dir for a build that embeds new text
// (a section's entities), with e as its embedder when given: it must be
// the one the index's vectors came from (nil: the index's own, LSA).
func OpenWithEmbedder(dir string, e models.Embedder) (*Index, error) {
	ix, err := Open(dir, store.OpenOptions{})
	if err != nil {
		return nil, err
	}
	if e != nil {
		if e.Name() != ix.Meta.Embedder || e.Dim() != ix.Meta.Dims {
			ix.Close()
			return nil, fmt.Errorf("index %s: vectors come from embedder %q (%d dims), not %q (%d dims)", dir, ix.Meta.Embedder, ix.Meta.Dims, e.Name(), e.Dim())
		}
		ix.Embedder = e
	}
	return ix, nil
}
