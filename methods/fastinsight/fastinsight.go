// Package fastinsight is FastInsight (docs/methods.md §1): GRanker
// (cross-encoder latents smoothed over the induced subgraph, then the head)
// interleaved with STeX (graph expansion steered by similarity to the
// query), streaming its ranking after every round. It registers
// "fastinsight" and its ablations (-alpha0, -beta0, -betainf, -nocache).
package fastinsight

import (
	"context"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// Options are FastInsight's hyperparameters and the decisions its paper
// leaves open. Every value is used as given (DefaultOptions holds the
// defaults).
type Options struct {
	Stage      retrieve.StageOptions   // the first stage: initial batch, refills and STeX's I_sim
	Encoder    retrieve.EncoderOptions // the cross-encoder
	GraphKinds []string                // graph-kind: the edges walked (empty: all)
	BMax       int                     // bmax: nodes retrieved in all, ≥ 1 (default 100)
	Batch      int                     // batch: nodes added per round, ≥ 1 (default 10)
	Alpha      float64                 // alpha: GRanker smoothing weight α in [0, 1] (default 0.2; 0: no smoothing)
	Beta       float64                 // beta: STeX structure weight β ≥ 0 (default 1; 0: similarity only; +Inf: structure only)
	// KeepIsolated (keep-isolated): a retrieved node with no retrieved
	// neighbour keeps its latent (H' = H) instead of the literal (1−α)·H.
	KeepIsolated bool
	// NoCache recomputes every latent at every GRanker call (the
	// fastinsight-nocache ablation: 550 encoder calls per query at the
	// defaults instead of 100).
	NoCache bool
}

// DefaultOptions: b_max 100, batch 10, α 0.2, β 1, from BM25.
func DefaultOptions() Options {
	return Options{Stage: retrieve.DefaultStage(), BMax: 100, Batch: 10, Alpha: 0.2, Beta: 1}
}

// Params binds every setting.
func (o *Options) Params(p *retrieve.Params) {
	o.Stage.Params(p)
	o.Encoder.Params(p)
	retrieve.GraphKinds(p, &o.GraphKinds)
	retrieve.BMax(p, &o.BMax, "FastInsight: nodes retrieved in all (its b_max)")
	retrieve.Batch(p, &o.Batch, "FastInsight: nodes added per round (its BATCH)")
	p.Float(&o.Alpha, "alpha", "FastInsight GRanker smoothing α in [0,1] (0 disables)", retrieve.Within(0.0, 1.0))
	p.Float(&o.Beta, "beta", "FastInsight STeX structure weight β ≥ 0 (0: similarity only; inf: structure only)", retrieve.AtLeast(0.0))
	p.Bool(&o.KeepIsolated, "keep-isolated", "FastInsight: a node without retrieved neighbours keeps its latent (default: literal (1−α)H)")
}

// Validate checks every setting.
func (o Options) Validate() error { return retrieve.Validate(&o, (*Options).Params) }

// variant is an ablation: one setting of the configured method fixed, and
// so not offered as a setting.
type variant struct {
	name, summary string
	fix           func(*Options)
	params        func(*Options, *retrieve.Params)
	tune          *retrieve.Tuning // the method itself is a tune candidate; ablations are not
}

// without binds every setting but the one a variant fixes.
func without(fixed string) func(*Options, *retrieve.Params) {
	return func(o *Options, p *retrieve.Params) {
		o.Params(p)
		p.Drop(fixed)
	}
}

var variants = []variant{
	{"fastinsight", "FastInsight: GRanker + STeX over the graph, streaming each round", func(*Options) {}, (*Options).Params,
		&retrieve.Tuning{Axes: []retrieve.TuneAxis{{Setting: "first-stage", Values: []string{"bm25", "hybrid"}}, {Setting: "alpha", Values: []string{"0.2", "0.5"}}}}},
	{"fastinsight-alpha0", "FastInsight without GRanker's smoothing (α = 0)", func(o *Options) { o.Alpha = 0 }, without("alpha"), nil},
	{"fastinsight-beta0", "FastInsight with STeX on similarity alone (β = 0)", func(o *Options) { o.Beta = 0 }, without("beta"), nil},
	{"fastinsight-betainf", "FastInsight with STeX on structure alone (β = ∞)", func(o *Options) { o.Beta = math.Inf(1) }, without("beta"), nil},
	{"fastinsight-nocache", "FastInsight recomputing every latent each round (no cache)", func(o *Options) { o.NoCache = true }, (*Options).Params, nil},
}

func init() {
	for _, v := range variants {
		retrieve.Must(retrieve.Register(retrieve.Def[Options]{
			Name: v.name, Summary: v.summary, Defaults: DefaultOptions, Params: v.params, Filters: true,
			New: func(ix *index.Index, env retrieve.Env, o Options) (retrieve.Method, error) {
				v.fix(&o)
				return newNamed(v.name, ix, env, o)
			},
			Reads: []string{"head"}, Tune: v.tune,
		}))
	}
}

// New makes method "fastinsight" with o.
func New(ix *index.Index, env retrieve.Env, o Options) (retrieve.StreamingMethod, error) {
	return newNamed("fastinsight", ix, env, o)
}

func newNamed(name string, ix *index.Index, env retrieve.Env, o Options) (*fastInsight, error) {
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
	rr, err := retrieve.NewReranker(ix, env.Backend, o.Encoder)
	if err != nil {
		return nil, err
	}
	return &fastInsight{name: name, ix: ix, o: o, st: st, be: env.Backend, Reranker: rr}, nil
}

// fastInsight interleaves GRanker with STeX, docs/methods.md §1.1–1.3.
// Decisions on §1.5's ambiguities:
//   - edges are undirected and a degree is the number of distinct
//     neighbours in the index's graph view over the chosen kinds
//     (index.View);
//   - isolated rows follow the literal formula unless KeepIsolated;
//   - latents are cached per query (NoCache to ablate);
//   - when STeX has too few candidates, the round is refilled with the
//     next nodes of the first stage's ranking;
//   - ties: GRanker keeps the previous order of equal scores; STeX breaks
//     equal scores by lower node number.
type fastInsight struct {
	name  string
	ix    *index.Index
	o     Options
	st    *retrieve.Stage
	adjMu sync.Once
	adj   *graphops.Adjacency
	be    engine.Backend
	nbs   neighbourhoods
	*retrieve.Reranker
}

func (m *fastInsight) Name() string { return m.name }

func (m *fastInsight) setup() error {
	m.adjMu.Do(func() { m.adj = m.ix.View(m.o.GraphKinds...) })
	_, err := m.Service()
	return err
}

// Retrieve runs the whole loop and returns the final ranking.
func (m *fastInsight) Retrieve(ctx context.Context, q retrieve.Query, k int) ([]retrieve.Hit, error) {
	var last []retrieve.Hit
	err := m.RetrieveStream(ctx, q, k, func(h []retrieve.Hit) bool { last = h; return true })
	return last, err
}

// RetrieveStream emits the ranking after every GRanker call (10, 20, …,
// b_max nodes at the defaults); emit returning false stops early.
func (m *fastInsight) RetrieveStream(ctx context.Context, q retrieve.Query, k int, emit func([]retrieve.Hit) bool) error {
	q = retrieve.Visible(m.ix, q) // deleted nodes stay out

	if strings.TrimSpace(q.Text) == "" {
		return retrieve.ErrEmptyQuery
	}
	if err := m.setup(); err != nil {
		return err
	}
	st, err := m.start(ctx, q)
	if err != nil || st == nil {
		return err
	}
	defer m.finish(st)
	for {
		hits, err := m.granker(ctx, st)
		if err != nil {
			return err
		}
		if !emit(hits[:min(k, len(hits))]) || len(st.ret) >= m.o.BMax || !m.expand(st) {
			return nil
		}
	}
}

// fiState is one query's retrieval state.
type fiState struct {
	sess   *models.Session
	adj    *graphops.Adjacency // the graph the query may walk (retrieve.AllowedView)
	scored *retrieve.Scored    // the first stage's scores, released with the query
	sim    []float32           // first-stage score of every node (I_sim): scored.Of
	order  []int32             // the first stage's ranking, for the initial batch and refills
	next   int                 // position in order for refills
	ret    []int32             // N_ret, in the current GRanker order
	nb     *neighbourhood      // N_ret's neighbours, kept for STeX as N_ret grows
}

// finish returns the query's pooled arrays.
func (m *fastInsight) finish(st *fiState) {
	m.nbs.put(st.nb)
	st.scored.Release()
}

// retrieve adds v to N_ret.
func (st *fiState) retrieve(v int32) {
	st.nb.add(v, st.adj, st.sim)
	st.ret = append(st.ret, v)
}

func (m *fastInsight) start(ctx context.Context, q retrieve.Query) (*fiState, error) {
	svc, err := m.Service()
	if err != nil {
		return nil, err
	}
	scored, err := m.st.Score(ctx, q)
	if err != nil || scored == nil {
		return nil, err
	}
	sim := scored.Of
	st := &fiState{scored: scored, sim: sim, adj: retrieve.AllowedView(m.adj, q)}
	for _, h := range m.st.RankScored(scored, 2*min(m.o.BMax, len(sim))) { // refills may take up to b_max of them
		st.order = append(st.order, h.Index)
	}
	if st.sess, err = svc.SessionWithin(ctx, q.Text, m.o.NoCache, retrieve.Subset(q)); err != nil {
		scored.Release()
		return nil, err
	}
	st.nb = m.nbs.get(len(sim))
	m.refill(st, min(m.o.Batch, m.o.BMax))
	return st, nil
}

// refill appends up to want unretrieved nodes from the first stage's ranking.
func (m *fastInsight) refill(st *fiState, want int) {
	for ; want > 0 && st.next < len(st.order); st.next++ {
		if v := st.order[st.next]; !st.nb.retrieved(v) {
			st.retrieve(v)
			want--
		}
	}
}

// granker rescores N_ret: latents (cached), smoothing over the induced
// subgraph with global degrees, head scores; N_ret is re-sorted by score.
func (m *fastInsight) granker(ctx context.Context, st *fiState) ([]retrieve.Hit, error) {
	H, err := st.sess.Latents(ctx, st.ret)
	if err != nil {
		return nil, err
	}
	if m.o.Alpha > 0 {
		if H, err = m.smooth(st.nb.induced(st.adj, st.ret), H); err != nil {
			return nil, err
		}
	}
	scores := make([]float32, len(st.ret))
	if err := m.CE.Head.Score(H, len(st.ret), scores); err != nil {
		return nil, err
	}
	idx := make([]int, len(st.ret))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] > scores[idx[b]] })
	hits := make([]retrieve.Hit, len(idx))
	ret := make([]int32, len(idx))
	for r, i := range idx {
		ret[r], hits[r] = st.ret[i], retrieve.Hit{Index: st.ret[i], Score: scores[i]}
	}
	st.ret = ret
	return hits, nil
}

// smooth computes H' = (1−α)H + αPH on the engine (on a queue of its
// own, where the backend has them: queries smooth concurrently).
func (m *fastInsight) smooth(sub *graphops.Subgraph, H []float32) ([]float32, error) {
	nodes := sub.Nodes
	d := m.CE.Enc.Dim()
	be, release, err := engine.OnQueue(m.be)
	if err != nil {
		return nil, err
	}
	defer release()
	hb, err := engine.Upload(be, H)
	if err != nil {
		return nil, err
	}
	defer be.Free(hb)
	out, err := be.Alloc(engine.F32, len(H))
	if err != nil {
		return nil, err
	}
	defer be.Free(out)
	err = engine.Smooth(be, engine.SmoothOp{M: len(nodes), D: d, AdjPtr: sub.Ptr, AdjIdx: sub.Idx, Deg: sub.Deg,
		H: hb, Out: out, Alpha: float32(m.o.Alpha), KeepIsolated: m.o.KeepIsolated})
	if err != nil {
		return nil, err
	}
	return engine.Download[float32](be, out)
}

// expand adds the next batch: STeX candidates, refilled from the vector
// ranking when STeX has too few. It reports whether anything was added.
func (m *fastInsight) expand(st *fiState) bool {
	want := min(len(st.ret)+m.o.Batch, m.o.BMax) - len(st.ret)
	before := len(st.ret)
	for _, c := range m.stex(st, want) {
		st.retrieve(c)
		want--
	}
	m.refill(st, want)
	return len(st.ret) > before
}
