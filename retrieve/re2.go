package retrieve

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/transformer"

	_ "github.com/gleaner-rag/gleaner/cuda"        // registers "cuda" (an explanatory error without -tags cuda)
	_ "github.com/gleaner-rag/gleaner/kernels/cpu" // registers "cpu"
)

func init() { mustRegister("re2", newRe2) }

// re2Depth is how many first-stage results the cross-encoder reranks.
const re2Depth = 100

// re2 is retrieve-then-rerank: BM25's top 100, rescored by the
// cross-encoder (latents through the shared scheduler, then the head).
// Ties keep the first-stage order.
type re2 struct {
	ix   *index.Index
	ce   *models.CrossEncoder
	enc  interface{ Close() error } // a transformer encoder to release, if any
	once sync.Once
	svc  *models.LatentService
	err  error
}

func newRe2(ix *index.Index, o Options) (Method, error) {
	if o.Model != "" {
		return newTransformerRe2(ix, o)
	}
	ce, err := ix.CrossEncoder()
	if err != nil {
		return nil, err
	}
	return &re2{ix: ix, ce: ce}, nil
}

// newTransformerRe2 reranks with a user-supplied cross-encoder folder.
func newTransformerRe2(ix *index.Index, o Options) (Method, error) {
	b, err := engine.Select("")
	if err != nil {
		return nil, err
	}
	texts := func(n int32) string {
		node := corpus.Node{Title: ix.Title(int(n)), Text: ix.Text(int(n))}
		return index.IndexText(&node)
	}
	enc, head, err := transformer.Load(o.Model, o.Runtime, b, texts, 0)
	if err != nil {
		return nil, err
	}
	if _, hash, ok := ix.Tokens(0); ok {
		enc.UseStoredTokens(hash, func(n int32) []int32 { ids, _, _ := ix.Tokens(int(n)); return ids })
	}
	return &re2{ix: ix, ce: &models.CrossEncoder{Enc: enc, Head: head}, enc: enc}, nil
}

func (m *re2) Name() string { return "re2" }

func (m *re2) service() (*models.LatentService, error) {
	m.once.Do(func() { m.svc, m.err = models.NewLatentService(m.ce.Enc, engine.SchedulerOptions{}) })
	return m.svc, m.err
}

// Close stops the method's scheduler and releases its model.
func (m *re2) Close(ctx context.Context) error {
	var errs []error
	if m.svc != nil {
		errs = append(errs, m.svc.Close(ctx))
	}
	if m.enc != nil {
		errs = append(errs, m.enc.Close())
	}
	return errors.Join(errs...)
}

func (m *re2) Retrieve(ctx context.Context, q Query, k int) ([]kernels.Hit, error) {
	if strings.TrimSpace(q.Text) == "" {
		return nil, ErrEmptyQuery
	}
	svc, err := m.service()
	if err != nil {
		return nil, err
	}
	first := m.ix.BM25.Search(q.Text, max(re2Depth, k))
	n := min(re2Depth, len(first))
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
