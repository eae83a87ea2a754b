package retrieve

import (
	"context"
	"strings"

	"github.com/gleaner-rag/gleaner/index"
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
	if strings.TrimSpace(q.Text) == "" {
		return nil, ErrEmptyQuery
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckAllow(m.ix, q); err != nil {
		return nil, err
	}
	if q.Allow == nil {
		return m.ix.BM25.Search(q.Text, k), nil
	}
	sc := make([]float32, m.ix.N())
	if _, err := m.ix.BM25.ScoreAllWithin(q.Text, sc, func(d uint32) bool { return q.Allow.Has(int(d)) }); err != nil {
		return nil, err
	}
	return topPositive(sc, k, true), nil
}
