package retrieve

import (
	"context"
	"strings"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
)

// EmbedQuery is q's vector as the index compares it: q.Vector prepared as
// the index prepares its own, or q.Text embedded by the index's embedder.
func EmbedQuery(ctx context.Context, ix *index.Index, q Query) ([]float32, error) {
	if q.Vector != nil {
		return ix.PrepareQueryVector(q.Vector)
	}
	if strings.TrimSpace(q.Text) == "" {
		return nil, ErrEmptyQuery
	}
	return ix.EmbedQuery(ctx, q.Text)
}

// DenseTopK runs the backend's exact top-k over the index's vectors for nq
// queries (row-major in q).
func DenseTopK(ctx context.Context, be engine.Backend, ix *index.Index, q []float32, nq, k int) ([][]Hit, error) {
	k = min(k, ix.N())
	out := make([][]Hit, nq)
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
			out[r] = append(out[r], Hit{Index: ids[r*k+j], Score: scores[r*k+j]})
		}
	}
	return out, nil
}

// DenseScores is every node's dot product with q, computed on the backend
// (one GEMM against the index's matrix).
func DenseScores(ctx context.Context, be engine.Backend, ix *index.Index, q []float32) ([]float32, error) {
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
	if be == nil {
		return nil, ErrNoBackend
	}
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

// Nearest returns, for each of the nq queries (row-major in q), the best
// row of an index array (n rows of d values, bound on be once under key:
// index.BindOn) by inner product, with its score; -1 when there is none.
// Ties go to the lower row.
func Nearest(ctx context.Context, be engine.Backend, ix *index.Index, key string, rows []float32, n, d int, q []float32, nq int) ([]int32, []float32, error) {
	best, scores := make([]int32, nq), make([]float32, nq)
	for i := range best {
		best[i] = -1
	}
	if n == 0 || nq == 0 {
		return best, scores, nil
	}
	if be == nil {
		return nil, nil, ErrNoBackend
	}
	x, err := ix.BindOn(be, key, rows)
	if err != nil {
		return nil, nil, err
	}
	v, release, err := engine.OnQueue(be)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	for i := 0; i < nq; i++ { // one query per op: the scan a single query gets, whatever nq
		hits, err := flatIP(ctx, v, x, n, d, q[i*d:(i+1)*d], 1)
		if err != nil {
			return nil, nil, err
		}
		if len(hits) > 0 {
			best[i], scores[i] = hits[0].Index, hits[0].Score
		}
	}
	return best, scores, nil
}

// TopRows returns the k rows of a bound index array (see Nearest) with the
// highest inner product with the query q, best first.
func TopRows(ctx context.Context, be engine.Backend, ix *index.Index, key string, rows []float32, n, d int, q []float32, k int) ([]Hit, error) {
	if n == 0 || k <= 0 {
		return nil, nil
	}
	if be == nil {
		return nil, ErrNoBackend
	}
	x, err := ix.BindOn(be, key, rows)
	if err != nil {
		return nil, err
	}
	v, release, err := engine.OnQueue(be)
	if err != nil {
		return nil, err
	}
	defer release()
	return flatIP(ctx, v, x, n, d, q, min(k, n))
}

// flatIP runs one query's exact top-k over the bound rows x on v.
func flatIP(ctx context.Context, v engine.Backend, x engine.Buffer, n, d int, q []float32, k int) ([]Hit, error) {
	qb, err := engine.Upload(v, q)
	if err != nil {
		return nil, err
	}
	defer v.Free(qb)
	idx, err := v.Alloc(engine.I32, k)
	if err != nil {
		return nil, err
	}
	defer v.Free(idx)
	sc, err := v.Alloc(engine.F32, k)
	if err != nil {
		return nil, err
	}
	defer v.Free(sc)
	if err := v.FlatIP(engine.FlatIPOp{X: x, Q: qb, N: n, D: d, B: 1, K: k, OutIdx: idx, OutScore: sc}); err != nil {
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
	var out []Hit
	for j := 0; j < k && ids[j] >= 0; j++ {
		out = append(out, Hit{Index: ids[j], Score: scores[j]})
	}
	return out, nil
}
