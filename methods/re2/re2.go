// Package re2 is retrieve-then-rerank: the first stage's top results
// rescored by the cross-encoder. It registers "re2" and "re2-vector"
// (FastInsight's Re2 baseline: vector search's top results reranked).
package re2

import (
	"context"
	"sort"
	"strings"

	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// Options configure re2.
type Options struct {
	Stage   retrieve.StageOptions   // the ranking reranked
	Encoder retrieve.EncoderOptions // the cross-encoder
	Depth   int                     // bmax: first-stage results rescored, ≥ 1 (default 100)
}

// DefaultOptions: BM25's top 100.
func DefaultOptions() Options { return Options{Stage: retrieve.DefaultStage(), Depth: 100} }

// Params binds every setting.
func (o *Options) Params(p *retrieve.Params) {
	o.Stage.Params(p)
	o.Encoder.Params(p)
	retrieve.BMax(p, &o.Depth, "re2: first-stage results rescored (its rerank depth)")
}

// Validate checks every setting.
func (o Options) Validate() error { return retrieve.Validate(&o, (*Options).Params) }

func init() {
	retrieve.Must(retrieve.Register(retrieve.Def[Options]{Name: "re2", Summary: "retrieve then rerank: the first stage's top bmax rescored by the cross-encoder",
		Defaults: DefaultOptions, Params: (*Options).Params, Reads: []string{"head"}, Filters: true,
		Tune: &retrieve.Tuning{Axes: []retrieve.TuneAxis{{Setting: "first-stage", Values: []string{"bm25", "hybrid"}}}},
		New: func(ix *index.Index, env retrieve.Env, o Options) (retrieve.Method, error) {
			return newNamed("re2", ix, env, o)
		}}))
	// re2-vector fixes its first stage: vector search's top results.
	retrieve.Must(retrieve.Register(retrieve.Def[Options]{Name: "re2-vector", Summary: "FastInsight's Re2 baseline: vector search's top bmax reranked",
		Defaults: DefaultOptions, Reads: []string{"head"}, Filters: true,
		Params: func(o *Options, p *retrieve.Params) {
			o.Params(p)
			p.Drop("first-stage")
			p.Drop(retrieve.HybridSettings()...)
		},
		New: func(ix *index.Index, env retrieve.Env, o Options) (retrieve.Method, error) {
			o.Stage.Kind = retrieve.StageVector
			return newNamed("re2-vector", ix, env, o)
		}}))
}

// re2 is retrieve-then-rerank: the first stage's top Depth rescored by
// the cross-encoder (latents through the shared scheduler, then the
// head). Ties keep the first-stage order.
type re2 struct {
	name  string
	st    *retrieve.Stage
	depth int
	*retrieve.Reranker
}

// New makes method "re2" with o.
func New(ix *index.Index, env retrieve.Env, o Options) (retrieve.Method, error) {
	return newNamed("re2", ix, env, o)
}

func newNamed(name string, ix *index.Index, env retrieve.Env, o Options) (*re2, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	st, err := retrieve.NewStage(ix, env.Backend, o.Stage)
	if err != nil {
		return nil, err
	}
	rr, err := retrieve.NewReranker(ix, env.Backend, o.Encoder)
	if err != nil {
		return nil, err
	}
	return &re2{name: name, st: st, depth: o.Depth, Reranker: rr}, nil
}

func (m *re2) Name() string { return m.name }

func (m *re2) Retrieve(ctx context.Context, q retrieve.Query, k int) ([]retrieve.Hit, error) {
	q = retrieve.Visible(m.st.Index(), q) // deleted nodes stay out

	if strings.TrimSpace(q.Text) == "" {
		return nil, retrieve.ErrEmptyQuery
	}
	svc, err := m.Service()
	if err != nil {
		return nil, err
	}
	first, err := m.st.Run(ctx, q, max(m.depth, k))
	if err != nil {
		return nil, err
	}
	n := min(m.depth, len(first))
	nodes := make([]int32, n)
	for i := range nodes {
		nodes[i] = first[i].Index
	}
	// Under a filter the first stage ranks only allowed nodes, and the
	// encoder's corpus statistics count only them (SessionWithin).
	sess, err := svc.SessionWithin(ctx, q.Text, false, retrieve.Subset(q))
	if err != nil {
		return nil, err
	}
	scores, err := retrieve.ScoreNodes(ctx, sess, m.CE.Head, nodes)
	if err != nil {
		return nil, err
	}
	out := make([]retrieve.Hit, n)
	for i := range out {
		out[i] = retrieve.Hit{Index: nodes[i], Score: scores[i]}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Score > out[b].Score })
	out = append(out, first[n:]...)
	return out[:min(k, len(out))], nil
}
