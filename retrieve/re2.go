package retrieve

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels"
	"github.com/gleaner-rag/gleaner/models"
)

func init() {
	mustRegister("re2", newRe2)
	// re2-vector is FastInsight's Re2 baseline: vector search's top results
	// reranked, whatever the configured first stage.
	mustRegister("re2-vector", func(ix *index.Index, o Options) (Method, error) {
		o.FirstStage = StageVector
		m, err := newRe2(ix, o)
		if err == nil {
			m.(*re2).name = "re2-vector"
		}
		return m, err
	})
}

// re2 is retrieve-then-rerank: the first stage's top Options.RerankDepth
// (default 100) rescored by the cross-encoder (latents through the shared
// scheduler, then the head). Ties keep the first-stage order.
type re2 struct {
	name  string
	st    *stage
	depth int
	reranker
}

func newRe2(ix *index.Index, o Options) (Method, error) {
	if o.RerankDepth < 1 {
		return nil, fmt.Errorf("retrieve: re2 rerank depth must be ≥ 1, got %d (start from retrieve.DefaultOptions)", o.RerankDepth)
	}
	st, err := newStage(ix, o)
	if err != nil {
		return nil, err
	}
	ce, closer, err := crossEncoder(ix, o)
	if err != nil {
		return nil, err
	}
	return &re2{name: "re2", st: st, depth: o.RerankDepth, reranker: reranker{ce: ce, enc: closer, workers: engine.QueueWorkers(o.Backend)}}, nil
}

func (m *re2) Name() string { return m.name }

func (m *re2) Retrieve(ctx context.Context, q Query, k int) ([]kernels.Hit, error) {
	if strings.TrimSpace(q.Text) == "" {
		return nil, ErrEmptyQuery
	}
	svc, err := m.service()
	if err != nil {
		return nil, err
	}
	first, err := m.st.run(ctx, q, max(m.depth, k))
	if err != nil {
		return nil, err
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
