package retrieve

import (
	"context"
	"strings"

	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels"
)

func init() { mustRegister("bm25", newBM25) }

// bm25 ranks by the index's BM25 postings.
type bm25 struct{ ix *index.Index }

func newBM25(ix *index.Index, _ Options) (Method, error) { return &bm25{ix}, nil }

func (m *bm25) Name() string { return "bm25" }

func (m *bm25) Retrieve(ctx context.Context, q Query, k int) ([]kernels.Hit, error) {
	if strings.TrimSpace(q.Text) == "" {
		return nil, ErrEmptyQuery
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return m.ix.BM25.Search(q.Text, k), nil
}
