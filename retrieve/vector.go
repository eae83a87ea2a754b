package retrieve

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels"
)

func init() { mustRegister("vector", newVector) }

// vector is exact dense search (O_vs) over the index's vector matrix.
type vector struct{ ix *index.Index }

func newVector(ix *index.Index, _ Options) (Method, error) { return &vector{ix}, nil }

func (m *vector) Name() string { return "vector" }

func (m *vector) Retrieve(ctx context.Context, q Query, k int) ([]kernels.Hit, error) {
	res, err := m.RetrieveBatch(ctx, []Query{q}, k)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// RetrieveBatch embeds the queries and scans the matrix once for all of
// them. A query whose terms are all outside the LSA vocabulary gets no hits.
func (m *vector) RetrieveBatch(ctx context.Context, qs []Query, k int) ([][]kernels.Hit, error) {
	d := m.ix.Meta.Dims
	batch := make([]float32, 0, len(qs)*d)
	empty := make([]bool, len(qs))
	for i, q := range qs {
		v, err := m.embed(ctx, q)
		switch {
		case errors.Is(err, index.ErrEmptyEmbedding):
			empty[i] = true
			v = make([]float32, d)
		case err != nil && len(qs) > 1: // name the query in a batch (a caller of Retrieve names its own)
			return nil, fmt.Errorf("batch query %d (id %q): %w", i, q.ID, err)
		case err != nil:
			return nil, err
		}
		batch = append(batch, v...)
	}
	hits, err := kernels.FlatIP(ctx, m.ix.Vectors, m.ix.N(), d, batch, len(qs), k, 0)
	if err != nil {
		return nil, err
	}
	for i := range hits {
		if empty[i] {
			hits[i] = nil
		}
	}
	return hits, nil
}

func (m *vector) embed(ctx context.Context, q Query) ([]float32, error) {
	if q.Vector != nil {
		return m.ix.PrepareQueryVector(q.Vector)
	}
	if strings.TrimSpace(q.Text) == "" {
		return nil, ErrEmptyQuery
	}
	return m.ix.EmbedQuery(ctx, q.Text)
}
