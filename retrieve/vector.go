package retrieve

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
)

// NoOptions are the options of a method without settings.
type NoOptions struct{}

// Params binds nothing.
func (*NoOptions) Params(*Params) {}

func init() {
	Must(Register(Def[NoOptions]{Name: "vector", Summary: "exact dense search over the index's vectors (on the backend)",
		Defaults: func() NoOptions { return NoOptions{} }, Params: (*NoOptions).Params, Tune: &Tuning{}, Filters: true,
		New: func(ix *index.Index, env Env, _ NoOptions) (Method, error) { return NewVector(ix, env.Backend) }}))
}

// Vector is exact dense search (O_vs) over the index's vector matrix, on
// the backend (engine.FlatIPOp).
type Vector struct {
	ix *index.Index
	be engine.Backend
}

// NewVector is method "vector" over ix on be.
func NewVector(ix *index.Index, be engine.Backend) (*Vector, error) {
	if be == nil {
		return nil, ErrNoBackend
	}
	return &Vector{ix, be}, nil
}

// Name implements Method.
func (m *Vector) Name() string { return "vector" }

// Retrieve implements Method.
func (m *Vector) Retrieve(ctx context.Context, q Query, k int) ([]Hit, error) {
	res, err := m.RetrieveBatch(ctx, []Query{q}, k)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// RetrieveBatch embeds the queries and scans the matrix once for all of
// them. A query whose terms are all outside the LSA vocabulary gets no hits.
// A filtered query (Query.Allow) is ranked on its own over its nodes.
func (m *Vector) RetrieveBatch(ctx context.Context, qs []Query, k int) ([][]Hit, error) {
	for _, q := range qs {
		if err := CheckAllow(m.ix, q); err != nil {
			return nil, err
		}
		if q.Allow != nil {
			return m.filtered(ctx, qs, k)
		}
	}
	d := m.ix.Meta.Dims
	batch := make([]float32, 0, len(qs)*d)
	empty := make([]bool, len(qs))
	for i, q := range qs {
		v, err := EmbedQuery(ctx, m.ix, q)
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
	hits, err := DenseTopK(ctx, m.be, m.ix, batch, len(qs), k)
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

// filtered ranks each query over its allowed nodes: every node's score,
// then the top k of those in the set.
func (m *Vector) filtered(ctx context.Context, qs []Query, k int) ([][]Hit, error) {
	st := &Stage{ix: m.ix, be: m.be, kind: StageVector}
	out := make([][]Hit, len(qs))
	for i, q := range qs {
		if strings.TrimSpace(q.Text) == "" && q.Vector == nil {
			return nil, ErrEmptyQuery
		}
		sc, err := st.vector(ctx, q)
		if err != nil {
			return nil, err
		}
		out[i] = st.Ranking(sc, k)
	}
	return out, nil
}
