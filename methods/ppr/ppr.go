// Package ppr is personalized PageRank over the index's graph, restarted
// from a first stage: method "ppr", and "ppr-bm25" (HippoRAG 2's baseline
// as gleaner first ran it: the dense reset over BM25 scores).
package ppr

import (
	"context"
	"fmt"
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

// minPushEps bounds ppr-push-eps below: a request's options may set it,
// and push's work grows as 1/ε (below this the exact solver is cheaper on
// any graph this machine holds).
const minPushEps = 1e-12

// PageRank solvers (Options.Solver).
const (
	SolverAuto  = "auto"  // push on graphs of at least PushFrom vertices with a seeded reset, else exact
	SolverExact = "exact" // power iteration to 1e-10 in L1 over the whole graph (igraph's semantics)
	SolverPush  = "push"  // forward local push from the seeds (graphops.LocalPPR): work bounded by PushEps, not by the graph
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
	Solver     string                // ppr-solver: SolverAuto, SolverExact or SolverPush
	PushEps    float64               // ppr-push-eps: push's residual bound per unit of strength, > 0
	PushFrom   int                   // ppr-push-from: SolverAuto pushes on graphs of at least this many vertices
}

// DefaultOptions: BM25's top 5 by 1/rank, damping 0.5 (chosen on the
// declared dev questions, benchmarks/RESULTS.md); the exact solver below
// 20,000 vertices, local push at ε 1e-6 from there (top-10 overlap with
// exact ≥ 0.98, benchmarks/RESULTS.md).
func DefaultOptions() Options {
	return Options{Stage: retrieve.DefaultStage(), Reset: ResetSeeds, Seeds: 5, SeedWeight: SeedByRank, Damping: 0.5,
		Solver: SolverAuto, PushEps: 1e-6, PushFrom: 20000}
}

// Params binds every setting.
func (o *Options) Params(p *retrieve.Params) {
	o.Stage.Params(p)
	retrieve.GraphKinds(p, &o.GraphKinds)
	p.String(&o.Reset, "ppr-reset", "ppr restart vector: seeds (the first stage's top --ppr-seeds) or dense (HippoRAG 2's, every passage)", retrieve.OneOf(ResetSeeds, ResetDense))
	p.Int(&o.Seeds, "ppr-seeds", "ppr: first-stage results that restart the walk", retrieve.AtLeast(1))
	p.String(&o.SeedWeight, "ppr-seed-weight", "ppr: seed weight ∝ score or ∝ 1/rank (score|rank)", retrieve.OneOf(SeedByScore, SeedByRank))
	p.Float(&o.Damping, "damping", "ppr: probability of following an edge, in (0,1)", retrieve.Between(0.0, 1.0))
	p.String(&o.Solver, "ppr-solver", "ppr: auto (push from --ppr-push-from vertices), exact (power iteration over the whole graph) or push (local push from the seeds)", retrieve.OneOf(SolverAuto, SolverExact, SolverPush))
	p.Float(&o.PushEps, "ppr-push-eps", "ppr: local push's residual bound per unit of a vertex's strength, in [1e-12, 1) (smaller: closer to exact, more work)", retrieve.Within(minPushEps, 1.0), retrieve.Between(0.0, 1.0))
	p.Int(&o.PushFrom, "ppr-push-from", "ppr: with ppr-solver auto, the graph size (vertices) from which local push replaces the exact solver", retrieve.AtLeast(1))
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
			p.Drop("first-stage", "ppr-reset", "ppr-seeds", "ppr-seed-weight",
				"ppr-solver", "ppr-push-eps", "ppr-push-from") // the dense reset restarts everywhere: nothing to push locally
			p.Drop(retrieve.HybridSettings()...)
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
	// plan solves unfiltered queries on adj: leaves eliminated, Gauss–
	// Seidel over the rest (2.3× faster than the plain iteration on the
	// peer graphs, within 3e-11 of it). A filtered query walks its own view
	// with the plain iteration.
	plan *graphops.PPRPlan
}

// New makes method "ppr" with o.
func New(ix *index.Index, env retrieve.Env, o Options) (retrieve.Method, error) {
	return newNamed("ppr", ix, env, o)
}

func newNamed(name string, ix *index.Index, env retrieve.Env, o Options) (*ppr, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Solver == SolverPush && o.Reset == ResetDense {
		return nil, fmt.Errorf("%s: ppr-solver push needs ppr-reset seeds (a dense reset restarts at every passage): %w", name, retrieve.ErrInvalid)
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
	q = retrieve.Visible(m.ix, q) // deleted nodes stay out

	m.once.Do(func() {
		m.adj = m.ix.View(m.o.GraphKinds...)
		if !m.pushes() { // the exact solver runs: plan it once
			m.plan = graphops.NewPPRPlan(m.adj)
		}
	})
	if m.pushes() {
		first, err := m.st.Run(ctx, q, m.o.Seeds) // the seeds alone: BM25's from its postings
		if err != nil {
			return nil, err
		}
		seeds := m.seedWeights(first)
		if seeds == nil {
			return nil, nil
		}
		return m.push(ctx, retrieve.AllowedView(m.adj, q), seeds, q.Allow, k)
	}
	sc, err := m.st.Scores(ctx, q)
	if err != nil || sc == nil {
		return nil, err
	}
	reset := m.reset(sc, q.Allow)
	if reset == nil {
		return nil, nil
	}
	adj := retrieve.AllowedView(m.adj, q) // walk only the allowed nodes: no mass passes through another
	po := graphops.DefaultPPROptions()
	po.Damping = m.o.Damping
	po.MaxIter = max(po.MaxIter, graphops.PPRIterations(m.o.Damping, po.Tol))
	_, end := retrieve.StartSpan(ctx, "pagerank", attribute.Int("gleaner.vertices", adj.N()), attribute.String("gleaner.solver", SolverExact))
	var pi []float64
	if (q.Allow == nil || q.Allow.Isolated()) && m.plan != nil { // adj is m.adj: the plan's graph
		pi, _, err = m.plan.Solve(ctx, reset, po)
	} else {
		pi, _, err = graphops.PersonalizedPageRank(ctx, adj, reset, po)
	}
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

// pushes says whether the query runs local push: asked for, or auto on a
// graph of at least PushFrom live vertices (those not deleted: as on a
// rebuild of them) with a seeded reset.
func (m *ppr) pushes() bool {
	switch m.o.Solver {
	case SolverPush:
		return true
	case SolverAuto:
		return m.o.Reset == ResetSeeds && m.ix.Live() >= m.o.PushFrom
	}
	return false
}

// push ranks by local push from the seeds: the pushed vertices by their
// estimate, then, as the exact ranking orders its unreached zeros, the
// lowest-numbered allowed nodes at 0 up to k. Its work is bounded by the
// ε and the seeds, not by the graph; the estimate is below PageRank by at
// most ε × a vertex's strength (graphops.LocalPPR).
func (m *ppr) push(ctx context.Context, adj *graphops.Adjacency, seeds map[int32]float64, allow *filter.Set, k int) ([]retrieve.Hit, error) {
	_, end := retrieve.StartSpan(ctx, "pagerank", attribute.Int("gleaner.vertices", adj.N()), attribute.String("gleaner.solver", SolverPush))
	res, err := graphops.LocalPPR(ctx, adj, seeds, m.o.Damping, m.o.PushEps)
	end(err)
	if err != nil {
		return nil, err
	}
	top := engine.NewTopK(min(k, adj.N()))
	for v, x := range res.P {
		if allow.Has(int(v)) {
			top.Push(v, float32(x))
		}
	}
	hits := top.Results()
	for v := 0; len(hits) < k && v < adj.N(); v++ {
		if _, pushed := res.P[int32(v)]; !pushed && allow.Has(v) {
			hits = append(hits, retrieve.Hit{Index: int32(v)})
		}
	}
	return hits, nil
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
	seeds := m.seedWeights(m.st.Ranking(sc, m.o.Seeds))
	if seeds == nil {
		return nil
	}
	for v, w := range seeds {
		r[v] = w
	}
	return r
}

// seedWeights is the seeded restart vector: the first stage's top Seeds
// results (seeds) weighed by score or 1/rank; nil when there are none.
// (The first stage ranks only allowed nodes.)
func (m *ppr) seedWeights(seeds []retrieve.Hit) map[int32]float64 {
	if len(seeds) == 0 {
		return nil
	}
	byRank := m.o.SeedWeight == SeedByRank
	if !byRank && !(seeds[0].Score > 0) {
		byRank = true // no positive score to weigh by (all cosines ≤ 0): fall back to 1/rank
	}
	r := make(map[int32]float64, len(seeds))
	for i, h := range seeds {
		w := float64(h.Score)
		if byRank {
			w = 1 / float64(i+1)
		}
		r[h.Index] = max(w, 0)
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
