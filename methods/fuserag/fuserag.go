// Package fuserag is FuseRAG's retrieval (docs/methods.md §7): stage 1,
// the greedy evidence walk, ranks B_q; stage 2b's knapsack anchors S_q are
// its LLM context. Method "fuserag"; FuseRAG's answering (package
// fuseattn, `gleaner answer`) starts from its Evidence.
package fuserag

import (
	"context"
	"errors"
	"github.com/gleaner-rag/gleaner/models/lexical"
	"math"
	"sync"

	"github.com/gleaner-rag/gleaner/fuseattn"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/vecmath"
	"github.com/gleaner-rag/gleaner/models/tiktoken"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// Options configure method "fuserag": stage 1 and the stage-2b anchors.
type Options struct {
	Stage      retrieve.StageOptions // the first stage the walk starts from
	GraphKinds []string              // graph-kind: the edges walked (empty: all)
	// Start (fuserag-start) is how many first-stage results the greedy walk
	// starts from (≥ 1; at most Budget of them are kept).
	Start int
	// Budget (fuserag-k) is K, the size of the evidence set B_q (≥ 1).
	Budget int
	// Lambda (fuserag-lambda) weighs novelty in the greedy gain
	// rel(q, v) − λ·max sim(v, u) (finite, ≥ 0).
	Lambda float64
	// Stop (fuserag-stop) is the STOP action's value: the walk ends when
	// the best gain is below it. −Inf fills the budget whenever edges
	// allow.
	Stop float64
	// Anchors configure the text anchors S_q (their Budget τ is the
	// context budget a caller asks for).
	Anchors fuseattn.AnchorOptions
}

// DefaultOptions are the defaults chosen on the declared 2Wiki dev
// questions (the first 200; benchmarks/fuserag): the walk starts from
// BM25's top 3 over the mentions graph (start 1–5 and λ 0–2 tried), fills
// K = 10 (the paper's STOP threshold is unspecified), λ = 0.5.
func DefaultOptions() Options {
	return Options{Stage: retrieve.DefaultStage(), Start: 3, Budget: 10, Lambda: 0.5, Stop: math.Inf(-1), Anchors: fuseattn.DefaultAnchorOptions()}
}

// Params binds every setting.
func (o *Options) Params(p *retrieve.Params) {
	o.Stage.Params(p)
	retrieve.GraphKinds(p, &o.GraphKinds)
	p.Int(&o.Start, "fuserag-start", "fuserag: first-stage results the greedy walk starts from", retrieve.AtLeast(1))
	p.Int(&o.Budget, "fuserag-k", "fuserag: K, the evidence set's size (start nodes included)", retrieve.AtLeast(1))
	p.Float(&o.Lambda, "fuserag-lambda", "fuserag: novelty weight λ in the gain rel(q,v) − λ·max sim(v, selected)", retrieve.AtLeast(0.0), retrieve.Finite)
	p.Float(&o.Stop, "fuserag-stop", "fuserag: STOP's value; the walk ends when the best gain is below it (-inf: fill K)", retrieve.NotNaN)
	a := &o.Anchors
	p.Float(&a.LinkWeight, "link-weight", "fuserag anchors: λ_link, the weight of a clause's links to other retrieved passages", retrieve.AtLeast(0.0), retrieve.Finite)
	p.Int(&a.MinClauseWords, "clause-words", "fuserag anchors: a sentence splits at a comma when both sides keep this many words", retrieve.AtLeast(1))
	p.Bool(&a.Titles, "anchor-titles", "fuserag anchors: prefix each clause with its passage's title (counted in τ)")
	p.Check(func() error { return errors.Join(o.greedy().Validate(), o.Anchors.Validate()) })
}

func (o Options) greedy() graphops.GreedyOptions {
	return graphops.GreedyOptions{Budget: o.Budget, Lambda: o.Lambda, Stop: o.Stop}
}

// Validate checks every setting.
func (o Options) Validate() error { return retrieve.Validate(&o, (*Options).Params) }

func init() {
	retrieve.Must(retrieve.Register(retrieve.Def[Options]{Name: "fuserag", Summary: "FuseRAG's retrieval: a greedy evidence walk from the first stage; knapsack text anchors as its context",
		Defaults: DefaultOptions, Params: (*Options).Params, Host: "the greedy walk runs on the host (K steps over a few hundred edges)", Filters: true,
		Tune: &retrieve.Tuning{Axes: []retrieve.TuneAxis{{Setting: "first-stage", Values: []string{"bm25", "hybrid"}}}},
		New:  func(ix *index.Index, env retrieve.Env, o Options) (retrieve.Method, error) { return New(ix, env, o) }}))
}

// New makes method "fuserag" with o.
func New(ix *index.Index, env retrieve.Env, o Options) (EvidenceMethod, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := retrieve.RequireGraph(ix, o.GraphKinds, "fuserag"); err != nil {
		return nil, err
	}
	st, err := retrieve.NewStage(ix, env.Backend, o.Stage)
	if err != nil {
		return nil, err
	}
	return &fuseRAG{ix: ix, st: st, o: o}, nil
}

// fuseRAG ranks B_q in selection order and builds S_q as its context.
type fuseRAG struct {
	ix   *index.Index
	st   *retrieve.Stage
	o    Options
	once sync.Once
	adj  *graphops.Adjacency
	// invNorm is each node vector's inverse norm (0 for a zero vector), so
	// novelty is a cosine on dot-product indexes too.
	invNorm []float64
}

// prepare builds the graph view and the vector norms once.
func (m *fuseRAG) prepare() {
	m.adj = m.ix.View(m.o.GraphKinds...)
	d := m.ix.Meta.Dims
	m.invNorm = make([]float64, m.ix.N())
	for v := range m.invNorm {
		x := m.ix.Vectors[v*d : (v+1)*d]
		if n := math.Sqrt(float64(vecmath.Dot(x, x))); n > 0 {
			m.invNorm[v] = 1 / n
		}
	}
}

func (m *fuseRAG) Name() string { return "fuserag" }

// Evidence runs stage 1 for q: the first stage's Start best nodes, then the
// greedy walk. It returns nil for a query nothing matches.
//
// Under a filter the first stage ranks only allowed nodes and the walk
// keeps to the allowed subgraph (retrieve.AllowedView), so the evidence,
// its graph and the anchors quote no other node.
func (m *fuseRAG) Evidence(ctx context.Context, q retrieve.Query) (*graphops.Evidence, error) {
	q = retrieve.Visible(m.ix, q) // deleted nodes stay out

	start, rel, release, err := m.firstStage(ctx, q)
	if err != nil || len(start) == 0 {
		return nil, err
	}
	defer release()
	m.once.Do(m.prepare)
	d := m.ix.Meta.Dims
	scores := graphops.GreedyScores{
		Rel: func(_, v int32, _ int64) float64 { return rel(v) },
		Sim: func(u, v int32) float64 { // cosine, whatever the index's metric
			return float64(vecmath.Dot(m.ix.Vectors[int(u)*d:int(u+1)*d], m.ix.Vectors[int(v)*d:int(v+1)*d])) * m.invNorm[u] * m.invNorm[v]
		},
		Sims: func(us []int32, v int32, out []float64) { // Sim's products, a hub's neighbours four at a time
			vecmath.DotRows(m.ix.Vectors, us, m.ix.Vectors[int(v)*d:int(v+1)*d], out)
			for i, u := range us {
				out[i] = out[i] * m.invNorm[u] * m.invNorm[v]
			}
		},
	}
	return graphops.GreedyEvidence(ctx, retrieve.AllowedView(m.adj, q), start, graphops.GreedyOptions{Budget: m.o.Budget, Lambda: m.o.Lambda, Stop: m.o.Stop}, scores)
}

// firstStage is the walk's start nodes (the first stage's Start best) and
// rel(q, v); release frees the first stage's scores after the walk.
// Under the bm25 stage, the start nodes come from BM25's top list and rel
// scores a node when the walk asks for it (lazyRelevance), so a question
// costs its walk rather than every node its terms match.
func (m *fuseRAG) firstStage(ctx context.Context, q retrieve.Query) ([]int32, func(int32) float64, func(), error) {
	if m.o.Stage.Kind == retrieve.StageBM25 {
		seeds, err := m.st.Run(ctx, q, m.o.Start)
		if err != nil || len(seeds) == 0 {
			return nil, nil, nil, err
		}
		rel, err := m.lazyRelevance(q, seeds[0].Index)
		if err != nil {
			return nil, nil, nil, err
		}
		return hitNodes(seeds), rel, func() {}, nil
	}
	sc, err := m.st.Score(ctx, q)
	if err != nil || sc == nil {
		return nil, nil, nil, err
	}
	seeds := m.st.RankScored(sc, m.o.Start)
	if len(seeds) == 0 {
		sc.Release()
		return nil, nil, nil, nil
	}
	return hitNodes(seeds), relevance(sc), sc.Release, nil
}

func hitNodes(hits []retrieve.Hit) []int32 {
	out := make([]int32, len(hits))
	for i, h := range hits {
		out[i] = h.Index
	}
	return out
}

// lazyRelevance is relevance under the bm25 stage, scored one node at a
// time and remembered: BM25(v) / BM25(best), with best the top node. Each
// BM25 is summed over the query's terms in query order, as the full
// scoring sums it, so rel is the same float32 quotient, and the maximum
// it divides by is the top node's. Under q.Allow (a filter, or the live
// nodes of an index that deleted some in place) BM25 takes the allowed
// nodes' statistics, as the full scoring does, and a node outside scores 0.
func (m *fuseRAG) lazyRelevance(q retrieve.Query, best int32) (func(int32) float64, error) {
	bm := m.ix.BM25
	terms := bm.TermIDs(q.Text)
	score := func(v int32) float32 { return bm.ScoreDoc(terms, uint32(v)) }
	if q.Allow != nil {
		sub, err := lexical.SubsetOf(bm, q.Allow)
		if err != nil {
			return nil, err
		}
		score = func(v int32) float32 {
			if !q.Allow.Has(int(v)) {
				return 0
			}
			return bm.ScoreDocWithin(terms, uint32(v), sub)
		}
	}
	hi := score(best)
	memo := map[int32]float64{}
	return func(v int32) float64 {
		x, ok := memo[v]
		if !ok {
			x = float64(score(v) / hi)
			memo[v] = x
		}
		return x
	}, nil
}

// relevance is rel(q, v): the first stage's score over its maximum, so
// that BM25, cosine and fused scores all weigh against novelty with the
// best at 1 (BM25 and fused scores lie in [0, 1]; negative cosines stay
// negative).
func relevance(sc *retrieve.Scored) func(v int32) float64 {
	top := float32(0)
	if sc.Matched != nil { // the only nodes above 0
		for _, v := range sc.Matched {
			top = max(top, sc.Of[v])
		}
	} else {
		for _, x := range sc.Of {
			top = max(top, x)
		}
	}
	return func(v int32) float64 {
		x := float64(sc.Of[v])
		if top > 0 {
			x /= float64(top)
		}
		return x
	}
}

// Retrieve returns B_q in selection order (start nodes first), at most k;
// scores fall with the order (min(Budget, nodes) − position: exact in
// float32 whatever the budget), as the greedy gains need not.
func (m *fuseRAG) Retrieve(ctx context.Context, q retrieve.Query, k int) ([]retrieve.Hit, error) {
	q = retrieve.Visible(m.ix, q) // deleted nodes stay out, and out of the count below
	ev, err := m.Evidence(ctx, q)
	if err != nil || ev == nil {
		return nil, err
	}
	out := make([]retrieve.Hit, 0, min(k, len(ev.Nodes)))
	n := m.ix.N()
	if q.Allow != nil {
		n = q.Allow.Len() // the scores must not tell how many nodes the index has beyond the filter
	}
	top := min(m.o.Budget, n)
	for i, v := range ev.Nodes[:min(k, len(ev.Nodes))] {
		out = append(out, retrieve.Hit{Index: v, Score: float32(top - i)})
	}
	return out, nil
}

// BuildContext is S_q: the anchors chosen from B_q's passages within
// budget cl100k_base tokens (the stand-in for the decoder's tokenizer when
// no decoder is loaded).
func (m *fuseRAG) BuildContext(ctx context.Context, q retrieve.Query, budget int) (*retrieve.LLMContext, error) {
	if err := retrieve.CheckBudget(budget); err != nil {
		return nil, err
	}
	tok, err := tiktoken.CL100K()
	if err != nil {
		return nil, err
	}
	set, nodes, err := m.Anchors(ctx, q, budget, tok)
	if err != nil || set == nil {
		return &retrieve.LLMContext{}, err
	}
	return &retrieve.LLMContext{Text: set.Text, Tokens: set.Tokens, Nodes: nodes,
		Sections: []retrieve.ContextSection{{Name: "anchors", Rows: len(set.Chosen), Tokens: set.Tokens}}}, nil
}

// Anchors runs stage 1 and builds the anchors within budget tokens of tok;
// it also returns the nodes the chosen clauses come from, in order.
func (m *fuseRAG) Anchors(ctx context.Context, q retrieve.Query, budget int, tok fuseattn.TokenCounter) (*fuseattn.AnchorSet, []int32, error) {
	q = retrieve.Visible(m.ix, q) // deleted nodes stay out
	ev, err := m.Evidence(ctx, q)
	if err != nil || ev == nil {
		return nil, nil, err
	}
	ps := make([]fuseattn.Passage, len(ev.Nodes))
	for i, v := range ev.Nodes {
		ps[i] = fuseattn.Passage{Title: m.ix.Title(int(v)), Text: m.ix.Text(int(v))}
	}
	o := m.o.Anchors
	o.Budget = budget
	set, err := fuseattn.Anchors(q.Text, ps, o, tok)
	if err != nil {
		return nil, nil, err
	}
	var nodes []int32
	for _, c := range set.Chosen {
		if v := ev.Nodes[c.Passage]; len(nodes) == 0 || nodes[len(nodes)-1] != v {
			nodes = append(nodes, v)
		}
	}
	return set, nodes, nil
}

// EvidenceMethod is a method that retrieves an evidence set with its graph
// (fuserag): FuseRAG's answering (package fuseattn) starts from it.
type EvidenceMethod interface {
	retrieve.Method
	retrieve.ContextBuilder
	Evidence(ctx context.Context, q retrieve.Query) (*graphops.Evidence, error)
}

var _ EvidenceMethod = (*fuseRAG)(nil)
