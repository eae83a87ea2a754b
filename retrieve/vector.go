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
	r, err := startDense(be, ix, q)
	if err != nil {
		return nil, err
	}
	defer r.close()
	v := r.v
	idx, err := v.Alloc(engine.I32, nq*k)
	if err != nil {
		return nil, err
	}
	defer v.Free(idx)
	sc, err := v.Alloc(engine.F32, nq*k)
	if err != nil {
		return nil, err
	}
	defer v.Free(sc)
	op := engine.FlatIPOp{X: r.x, Q: r.qb, N: ix.N(), D: ix.Meta.Dims, B: nq, K: k, OutIdx: idx, OutScore: sc}
	if err := v.FlatIP(op); err != nil {
		return nil, err
	}
	if err := v.Sync(ctx); err != nil {
		return nil, err
	}
	ids, err := engine.Download[int32](v, idx)
	if err != nil {
		return nil, err
	}
	scores, err := engine.Download[float32](v, sc)
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
	r, err := startDense(be, ix, q)
	if err != nil {
		return nil, err
	}
	defer r.close()
	out, err := r.v.Alloc(engine.F32, ix.N())
	if err != nil {
		return nil, err
	}
	defer r.v.Free(out)
	op := engine.GemmOp{TransB: true, M: 1, N: ix.N(), K: ix.Meta.Dims, Alpha: 1, A: r.qb, B: r.x, C: out}
	if err := r.v.Gemm(op); err != nil {
		return nil, err
	}
	if err := r.v.Sync(ctx); err != nil {
		return nil, err
	}
	return engine.Download[float32](r.v, out)
}

// denseRun is one dense search: the index's matrix x (bound on the
// backend itself, once per index) and the queries qb on a queue view v of
// it (engine.OnQueue), so concurrent searches and rerankers overlap on a
// device.
type denseRun struct {
	v       engine.Backend
	release func()
	x, qb   engine.Buffer
}

func startDense(be engine.Backend, ix *index.Index, q []float32) (*denseRun, error) {
	x, err := ix.VectorsOn(be)
	if err != nil {
		return nil, err
	}
	v, release, err := engine.OnQueue(be)
	if err != nil {
		return nil, err
	}
	qb, err := engine.Upload(v, q)
	if err != nil {
		release()
		return nil, err
	}
	return &denseRun{v: v, release: release, x: x, qb: qb}, nil
}

// close frees the queries and releases the view.
func (r *denseRun) close() {
	r.v.Free(r.qb)
	r.release()
}
