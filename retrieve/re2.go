package retrieve

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels"
	"github.com/gleaner-rag/gleaner/models"

	_ "github.com/gleaner-rag/gleaner/cuda"        // registers "cuda" (an explanatory error without -tags cuda)
	_ "github.com/gleaner-rag/gleaner/kernels/cpu" // registers "cpu"
)

func init() {
	mustRegister("re2", newRe2)
	mustRegister("re2-vector", func(ix *index.Index, o Options) (Method, error) {
		m, err := newRe2(ix, o)
		if err == nil {
			m.(*re2).vectorFirst = true
		}
		return m, err
	})
}

// re2Depth is how many first-stage results the cross-encoder reranks.
const re2Depth = 100

// re2 is retrieve-then-rerank: BM25's top 100 (re2-vector: vector
// search's; Options.RerankDepth changes the depth), rescored by the
// cross-encoder (latents through the shared scheduler, then the head).
// Ties keep the first-stage order.
type re2 struct {
	ix          *index.Index
	vectorFirst bool // first stage: vector search (FastInsight's Re2) instead of BM25
	depth       int
	reranker
}

func newRe2(ix *index.Index, o Options) (Method, error) {
	ce, closer, err := crossEncoder(ix, o)
	if err != nil {
		return nil, err
	}
	depth := o.RerankDepth
	if depth == 0 {
		depth = re2Depth
	}
	if depth < 0 {
		return nil, fmt.Errorf("retrieve: re2 depth must be positive, got %d", depth)
	}
	return &re2{ix: ix, depth: depth, reranker: reranker{ce: ce, enc: closer}}, nil
}

func (m *re2) Name() string {
	if m.vectorFirst {
		return "re2-vector"
	}
	return "re2"
}

func (m *re2) Retrieve(ctx context.Context, q Query, k int) ([]kernels.Hit, error) {
	if strings.TrimSpace(q.Text) == "" {
		return nil, ErrEmptyQuery
	}
	svc, err := m.service()
	if err != nil {
		return nil, err
	}
	first := m.ix.BM25.Search(q.Text, max(m.depth, k))
	if m.vectorFirst {
		if first, err = (&vector{ix: m.ix}).Retrieve(ctx, q, max(m.depth, k)); err != nil {
			return nil, err
		}
	}
	n := min(m.depth, len(first))
	nodes := make([]int32, n)
	for i := range nodes {
		nodes[i] = first[i].Index
	}
	sess, err := svc.Session(ctx, q.Text, false)
	if err != nil {
		return nil, err
	}
	scores, err := ScoreNodes(ctx, sess, m.ce.Head, nodes)
	if err != nil {
		return nil, err
	}
	out := make([]kernels.Hit, n)
	for i := range out {
		out[i] = kernels.Hit{Index: nodes[i], Score: scores[i]}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Score > out[b].Score })
	out = append(out, first[n:]...)
	return out[:min(k, len(out))], nil
}

// ScoreNodes scores nodes with a session's latents and a head.
func ScoreNodes(ctx context.Context, sess *models.Session, h *models.Head, nodes []int32) ([]float32, error) {
	H, err := sess.Latents(ctx, nodes)
	if err != nil {
		return nil, err
	}
	s := make([]float32, len(nodes))
	return s, h.Score(H, len(nodes), s)
}
