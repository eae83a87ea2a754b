package retrieve

import (
	"context"
	"strings"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/vecmath"
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
	if be == nil {
		return nil, ErrNoBackend
	}
	x, err := ix.VectorsOn(be)
	if err != nil {
		return nil, err
	}
	return engine.SearchFlat(ctx, be, x, ix.N(), ix.Meta.Dims, q, nq, k)
}

// DenseScores is every node's dot product with q, computed on the backend
// (engine.ScoreRows: on the host, FlatIP's kernel on every core, so a node
// scores here as in DenseTopK; elsewhere one GEMM against the index's
// matrix).
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
	op := engine.ScoreRowsOp{X: r.x, Q: r.qb, Out: out, N: ix.N(), D: ix.Meta.Dims}
	if err := engine.ScoreRows(r.v, op); err != nil {
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
	for i := 0; i < nq; i++ { // one query per op: the scan a single query gets, whatever nq
		hits, err := TopRows(ctx, be, ix, key, rows, n, d, q[i*d:(i+1)*d], 1)
		if err != nil {
			return nil, nil, err
		}
		if len(hits) > 0 {
			best[i], scores[i] = hits[0].Index, hits[0].Score
		}
	}
	return best, scores, nil
}

// TopRowsWhere is TopRows on the host over the rows of a row-major array
// of width d that keep accepts: for a view or a subset a filter leaves,
// which a bound copy of the whole array cannot scan. Ties go to the lower
// row, as the backend scan's.
func TopRowsWhere(rows []float32, d int, keep func(row int32) bool, q []float32, k int) []Hit {
	top := engine.NewTopK(k)
	for r := range int32(len(rows) / d) {
		if keep(r) {
			top.Push(r, vecmath.Dot(q, rows[int(r)*d:(int(r)+1)*d]))
		}
	}
	return top.Results()
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
	hits, err := engine.SearchFlat(ctx, be, x, n, d, q, 1, k)
	if err != nil {
		return nil, err
	}
	return hits[0], nil
}
