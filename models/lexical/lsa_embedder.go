package lexical

import (
	"context"
	"fmt"

	"github.com/gleaner-rag/gleaner/internal/parallel"
)

// LSAEmbedder embeds text with a fitted LSA model over an index's term
// table. It satisfies models.Embedder and is safe for concurrent use.
type LSAEmbedder struct {
	M     *LSA
	Terms TermTable
}

// Name implements models.Embedder.
func (e *LSAEmbedder) Name() string { return "lsa" }

// Dim implements models.Embedder.
func (e *LSAEmbedder) Dim() int { return e.M.Dims }

// Embed implements models.Embedder; a text with no LSA term embeds as zeros.
func (e *LSAEmbedder) Embed(ctx context.Context, texts []string) ([]float32, error) {
	out := make([]float32, len(texts)*e.M.Dims)
	for i, t := range texts {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		e.M.EmbedTerms(e.Terms, Analyze(t), out[i*e.M.Dims:(i+1)*e.M.Dims])
		parallel.Yield(ctx)
	}
	return out, nil
}

// Check validates the model against the term table it was fitted on.
func (e *LSAEmbedder) Check() error {
	if len(e.M.Row) != e.Terms.Len() || len(e.M.V) != len(e.M.IDF)*e.M.Dims {
		return fmt.Errorf("lsa model does not match the vocabulary")
	}
	for _, r := range e.M.Row {
		if int(r) >= len(e.M.IDF) {
			return fmt.Errorf("lsa row %d outside %d", r, len(e.M.IDF))
		}
	}
	return nil
}
