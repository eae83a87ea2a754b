package retrieve

import (
	"context"
	"strings"

	"github.com/gleaner-rag/gleaner/index"
)

func init() {
	Must(Register(Def[NoOptions]{Name: "bm25", Summary: "BM25 over the index's postings",
		Defaults: func() NoOptions { return NoOptions{} }, Params: (*NoOptions).Params, Tune: &Tuning{},
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
	return m.ix.BM25.Search(q.Text, k), nil
}
