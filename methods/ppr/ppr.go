// Package ppr is personalized PageRank over the index's graph, restarted
// from a first stage: method "ppr", and "ppr-bm25" (HippoRAG 2's baseline
// as gleaner first ran it: the dense reset over BM25 scores).
package ppr

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/vecmath"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

// Restart vectors (Options.Reset).
const (
	ResetSeeds = "seeds" // the first stage's top Seeds results restart the walk
	ResetDense = "dense" // HippoRAG 2's: every passage, by its min–max-normalised score
)

// Seed weights of the seeded reset (Options.SeedWeight).
const (
	SeedByScore = "score" // ∝ the first stage's score
	SeedByRank  = "rank"  // ∝ 1/rank
)

// Options configure ppr.
type Options struct {
	Stage      retrieve.StageOptions // the first stage the restart vector comes from
	GraphKinds []string              // graph-kind: the edges walked (empty: all)
	Reset      string                // ppr-reset: ResetSeeds or ResetDense
	Seeds      int                   // ppr-seeds: seeds: first-stage results that restart the walk, ≥ 1
	SeedWeight string                // ppr-seed-weight: seeds: SeedByScore or SeedByRank
	Damping    float64               // damping: probability of following an edge, in (0, 1)
}

// DefaultOptions: BM25's top 5 by 1/rank, damping 0.5 (chosen on the
// declared dev questions, benchmarks/RESULTS.md).
func DefaultOptions() Options {
	return Options{Stage: retrieve.DefaultStage(), Reset: ResetSeeds, Seeds: 5, SeedWeight: SeedByRank, Damping: 0.5}
}

// Params binds every setting.
func (o *Options) Params(p *retrieve.Params) {
	o.Stage.Params(p)
	retrieve.GraphKinds(p, &o.GraphKinds)
	p.String(&o.Reset, "ppr-reset", "ppr restart vector: seeds (the first stage's top --ppr-seeds) or dense (HippoRAG 2's, every passage)", retrieve.OneOf(ResetSeeds, ResetDense))
	p.Int(&o.Seeds, "ppr-seeds", "ppr: first-stage results that restart the walk", retrieve.AtLeast(1))
	p.String(&o.SeedWeight, "ppr-seed-weight", "ppr: seed weight ∝ score or ∝ 1/rank (score|rank)", retrieve.OneOf(SeedByScore, SeedByRank))
	p.Float(&o.Damping, "damping", "ppr: probability of following an edge, in (0,1)", retrieve.Between(0.0, 1.0))
}

// Validate checks every setting.
func (o Options) Validate() error { return retrieve.Validate(&o, (*Options).Params) }

func init() {
	retrieve.Must(retrieve.Register(retrieve.Def[Options]{Name: "ppr", Summary: "personalized PageRank over the graph, restarted from the first stage's top results",
		Defaults: DefaultOptions, Params: (*Options).Params, Host: "PageRank runs on the host (a sparse iteration per query)", Filters: true,
		Tune: &retrieve.Tuning{Axes: []retrieve.TuneAxis{{Setting: "first-stage", Values: []string{"bm25", "hybrid"}},
			{Setting: "ppr-seeds", Values: []string{"5", "2", "10"}}, {Setting: "damping", Values: []string{"0.5", "0.85"}}}},
		New: func(ix *index.Index, env retrieve.Env, o Options) (retrieve.Method, error) {
			return newNamed("ppr", ix, env, o)
		}}))
	retrieve.Must(retrieve.Register(retrieve.Def[Options]{Name: "ppr-bm25", Summary: "HippoRAG 2's baseline: PageRank restarted from every passage's BM25 score",
		Defaults: DefaultOptions, Host: "PageRank runs on the host (a sparse iteration per query)", Filters: true,
		Tune: &retrieve.Tuning{Axes: []retrieve.TuneAxis{{Setting: "damping", Values: []string{"0.5", "0.85"}}}},
		Params: func(o *Options, p *retrieve.Params) {
			o.Params(p)
			p.Drop("first-stage", "ppr-reset", "ppr-seeds", "ppr-seed-weight", "hybrid-fusion", "hybrid-weight", "rrf-k", "rrf-depth")
		},
		New: func(ix *index.Index, env retrieve.Env, o Options) (retrieve.Method, error) {
			o.Stage.Kind, o.Reset = retrieve.StageBM25, ResetDense
			return newNamed("ppr-bm25", ix, env, o)
		}}))
}

// passageMass is HippoRAG 2's passage node weight (docs/methods.md §6). It
// cancels once the reset is normalised; it is kept to mirror the reference.
const passageMass = 0.05

// ppr is personalized PageRank over the index's graph view, passages
// ranked by their PageRank. The restart vector comes from the first stage:
//   - ResetSeeds (default): its top Seeds results, weighted by score or
//     by 1/rank; nothing else restarts the walk;
//   - ResetDense: HippoRAG 2's, every passage with 0.05 × its min–max-
//     normalised score. Without HippoRAG's phrase nodes to carry the seeds
//     this reset is nearly flat, and the walk drifts to hubs.
type ppr struct {
	name string
	ix   *index.Index
	st   *retrieve.Stage
	o    Options
	once sync.Once
	adj  *graphops.Adjacency
}

// New makes method "ppr" with o.
func New(ix *index.Index, env retrieve.Env, o Options) (retrieve.Method, error) {
	return newNamed("ppr", ix, env, o)
}

func newNamed(name string, ix *index.Index, env retrieve.Env, o Options) (*ppr, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := retrieve.RequireGraph(ix, o.GraphKinds, name); err != nil {
		return nil, err
	}
	st, err := retrieve.NewStage(ix, env.Backend, o.Stage)
	if err != nil {
		return nil, err
	}
	return &ppr{name: name, ix: ix, st: st, o: o}, nil
}

func (m *ppr) Name() string { return m.name }

func (m *ppr) Retrieve(ctx context.Context, q retrieve.Query, k int) ([]retrieve.Hit, error) {
	sc, err := m.st.Scores(ctx, q)
	if err != nil || sc == nil {
		return nil, err
	}
	reset := m.reset(sc, q.Allow)
	if reset == nil {
		return nil, nil
	}
	m.once.Do(func() { m.adj = m.ix.View(m.o.GraphKinds...) })
	adj := retrieve.AllowedView(m.adj, q) // walk only the allowed nodes: no mass passes through another
	po := graphops.DefaultPPROptions()
	po.Damping = m.o.Damping
	po.MaxIter = max(po.MaxIter, graphops.PPRIterations(m.o.Damping, po.Tol))
	_, end := retrieve.StartSpan(ctx, "pagerank", attribute.Int("gleaner.vertices", adj.N()))
	pi, _, err := graphops.PersonalizedPageRank(ctx, adj, reset, po)
	end(err)
	if err != nil {
		return nil, err
	}
	top := engine.NewTopK(min(k, len(pi)))
	for v, x := range pi {
		if q.Allow.Has(v) {
			top.Push(int32(v), float32(x))
		}
	}
	return top.Results(), nil
}

// reset builds the restart vector from the first-stage scores (over the
// allowed nodes; nil: all); nil when nothing distinguishes any passage.
func (m *ppr) reset(sc []float32, allow *filter.Set) []float64 {
	r := make([]float64, len(sc))
	if m.o.Reset == ResetDense {
		if allow != nil {
			return denseWithin(sc, allow)
		}
		for i, x := range sc {
			r[i] = float64(x)
		}
		return vecmath.MinMaxScaled(r, passageMass)
	}
	seeds := m.st.Ranking(sc, m.o.Seeds)
	byRank := m.o.SeedWeight == SeedByRank
	if !byRank && len(seeds) > 0 && !(seeds[0].Score > 0) {
		byRank = true // no positive score to weigh by (all cosines ≤ 0): fall back to 1/rank
	}
	for i, h := range seeds {
		w := float64(h.Score)
		if byRank {
			w = 1 / float64(i+1)
		}
		r[h.Index] = max(w, 0)
	}
	if len(seeds) == 0 {
		return nil
	}
	return r
}

// denseWithin is the dense reset over the allowed nodes alone: their
// scores min–max scaled among themselves, 0 elsewhere.
func denseWithin(sc []float32, allow *filter.Set) []float64 {
	var kept []float64
	for i, x := range sc {
		if allow.Has(i) {
			kept = append(kept, float64(x))
		}
	}
	if len(kept) == 0 {
		return nil
	}
	kept = vecmath.MinMaxScaled(kept, passageMass)
	r := make([]float64, len(sc))
	j := 0
	for i := range sc {
		if allow.Has(i) {
			r[i] = kept[j]
			j++
		}
	}
	return r
}
