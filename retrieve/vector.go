package retrieve

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels"
)

func init() { mustRegister("vector", newVector) }

// vector is exact dense search (O_vs) over the index's vector matrix, on
// the backend (engine.FlatIPOp).
type vector struct {
	ix *index.Index
	be engine.Backend
}

func newVector(ix *index.Index, o Options) (Method, error) {
	if o.Backend == nil {
		return nil, errNoBackend
	}
	return &vector{ix, o.Backend}, nil
}

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
	hits, err := denseTopK(ctx, m.be, m.ix, batch, len(qs), k)
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

// denseTopK runs the backend's exact top-k for nq queries (row-major in q).
func denseTopK(ctx context.Context, be engine.Backend, ix *index.Index, q []float32, nq, k int) ([][]kernels.Hit, error) {
	k = min(k, ix.N())
	out := make([][]kernels.Hit, nq)
	if k <= 0 || nq == 0 {
		return out, nil
	}
	x, qb, err := onBackend(be, ix, q)
	if err != nil {
		return nil, err
	}
	defer be.Free(qb)
	idx, err := be.Alloc(engine.I32, nq*k)
	if err != nil {
		return nil, err
	}
	defer be.Free(idx)
	sc, err := be.Alloc(engine.F32, nq*k)
	if err != nil {
		return nil, err
	}
	defer be.Free(sc)
	op := engine.FlatIPOp{X: x, Q: qb, N: ix.N(), D: ix.Meta.Dims, B: nq, K: k, OutIdx: idx, OutScore: sc}
	if err := be.FlatIP(op); err != nil {
		return nil, err
	}
	if err := be.Sync(ctx); err != nil {
		return nil, err
	}
	ids, err := engine.Download[int32](be, idx)
	if err != nil {
		return nil, err
	}
	scores, err := engine.Download[float32](be, sc)
	if err != nil {
		return nil, err
	}
	for r := range out {
		for j := 0; j < k && ids[r*k+j] >= 0; j++ {
			out[r] = append(out[r], kernels.Hit{Index: ids[r*k+j], Score: scores[r*k+j]})
		}
	}
	return out, nil
}

// denseScores is every node's dot product with q, computed on the backend
// (one GEMM against the index's matrix).
func denseScores(ctx context.Context, be engine.Backend, ix *index.Index, q []float32) ([]float32, error) {
	x, qb, err := onBackend(be, ix, q)
	if err != nil {
		return nil, err
	}
	defer be.Free(qb)
	out, err := be.Alloc(engine.F32, ix.N())
	if err != nil {
		return nil, err
	}
	defer be.Free(out)
	op := engine.GemmOp{TransB: true, M: 1, N: ix.N(), K: ix.Meta.Dims, Alpha: 1, A: qb, B: x, C: out}
	if err := be.Gemm(op); err != nil {
		return nil, err
	}
	if err := be.Sync(ctx); err != nil {
		return nil, err
	}
	return engine.Download[float32](be, out)
}

// onBackend returns the index's matrix and the queries q as buffers of be;
// the caller frees the queries' buffer.
func onBackend(be engine.Backend, ix *index.Index, q []float32) (x, qb engine.Buffer, err error) {
	if x, err = ix.VectorsOn(be); err != nil {
		return nil, nil, err
	}
	qb, err = engine.Upload(be, q)
	return x, qb, err
}
