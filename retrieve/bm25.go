package retrieve

import (
	"context"
	"strings"

	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/lexical"
)

func init() {
	Must(Register(Def[NoOptions]{Name: "bm25", Summary: "BM25 over the index's postings",
		Defaults: func() NoOptions { return NoOptions{} }, Params: (*NoOptions).Params, Tune: &Tuning{}, Filters: true,
		New: func(ix *index.Index, _ Env, _ NoOptions) (Method, error) { return bm25{ix}, nil }}))
}

// bm25 ranks by the index's BM25 postings.
type bm25 struct{ ix *index.Index }

func (m bm25) Name() string { return "bm25" }

func (m bm25) Retrieve(ctx context.Context, q Query, k int) ([]Hit, error) {
	q = Visible(m.ix, q) // deleted nodes stay out

	if strings.TrimSpace(q.Text) == "" {
		return nil, ErrEmptyQuery
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckAllow(m.ix, q); err != nil {
		return nil, err
	}
	return searchBM25(m.ix, q, k)
}

// searchBM25 is BM25's top k for q by raw score, over q's allowed nodes
// (BM25's statistics those of the allowed nodes alone).
func searchBM25(ix *index.Index, q Query, k int) ([]Hit, error) {
	if q.Allow == nil {
		return ix.BM25.Search(q.Text, k), nil
	}
	sub, err := subsetOf(ix, q)
	if err != nil {
		return nil, err
	}
	return ix.BM25.SearchWithin(q.Text, k, sub), nil
}

// bm25Within scores q over its allowed nodes as if they were the whole
// index (lexical.BM25.ScoreAllWithin).
func bm25Within(ix *index.Index, q Query, sc []float32) (int, error) {
	sub, err := subsetOf(ix, q)
	if err != nil {
		return 0, err
	}
	return ix.BM25.ScoreAllWithin(q.Text, sc, sub)
}

// subsetOf is q's allowed nodes as BM25's subset, made once per set and
// scorer.
func subsetOf(ix *index.Index, q Query) (*lexical.Subset, error) {
	return lexical.SubsetOf(ix.BM25, q.Allow)
}

// Subset is q's allowed nodes for a pair encoder (models.NodeSubset), nil
// when q is not filtered.
func Subset(q Query) models.NodeSubset {
	if q.Allow == nil {
		return nil // not a typed nil: encoders test for none
	}
	return q.Allow
}
