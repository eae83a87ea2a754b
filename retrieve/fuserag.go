package retrieve

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/gleaner-rag/gleaner/fuseattn"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels"
	"github.com/gleaner-rag/gleaner/models/tiktoken"
)

func init() { mustRegister("fuserag", newFuseRAG) }

// FuseRAGOptions configure method "fuserag" (FuseRAG's retrieval: stage 1
// and the stage-2b anchors; docs/methods.md §7).
type FuseRAGOptions struct {
	// Start is how many first-stage results the greedy walk starts from
	// (≥ 1; at most Budget of them are kept).
	Start int
	// Budget is K, the size of the evidence set B_q (≥ 1).
	Budget int
	// Lambda weighs novelty in the greedy gain rel(q, v) − λ·max sim(v, u)
	// (≥ 0).
	Lambda float64
	// Stop is the STOP action's value: the walk ends when the best gain is
	// below it. −Inf fills the budget whenever edges allow.
	Stop float64
	// Anchors configure the text anchors S_q (their Budget τ is the
	// context budget a caller asks for).
	Anchors fuseattn.AnchorOptions
}

// DefaultFuseRAGOptions are the defaults chosen on the declared 2Wiki dev
// questions (the first 200; benchmarks/fuserag): the walk starts from BM25's
// top 3 over the mentions graph (start 1–5 and λ 0–2 tried), fills K = 10
// (the paper's STOP threshold is unspecified), λ = 0.5.
func DefaultFuseRAGOptions() FuseRAGOptions {
	return FuseRAGOptions{Start: 3, Budget: 10, Lambda: 0.5, Stop: math.Inf(-1), Anchors: fuseattn.DefaultAnchorOptions()}
}

func (o FuseRAGOptions) validate() error {
	if o.Start < 1 {
		return fmt.Errorf("retrieve: fuserag start %d: want ≥ 1 first-stage results", o.Start)
	}
	if err := (graphops.GreedyOptions{Budget: o.Budget, Lambda: o.Lambda, Stop: o.Stop}).Validate(); err != nil {
		return fmt.Errorf("retrieve: fuserag: %w", err)
	}
	if err := o.Anchors.Validate(); err != nil {
		return fmt.Errorf("retrieve: fuserag: %w", err)
	}
	return nil
}

// fuseRAG ranks B_q in selection order and builds S_q as its context.
type fuseRAG struct {
	ix    *index.Index
	st    *stage
	o     FuseRAGOptions
	kinds []string
	once  sync.Once
	adj   *graphops.Adjacency
	// invNorm is each node vector's inverse norm (0 for a zero vector), so
	// novelty is a cosine on dot-product indexes too.
	invNorm []float64
}

// prepare builds the graph view and the vector norms once.
func (m *fuseRAG) prepare() {
	m.adj = m.ix.View(m.kinds...)
	d := m.ix.Meta.Dims
	m.invNorm = make([]float64, m.ix.N())
	for v := range m.invNorm {
		x := m.ix.Vectors[v*d : (v+1)*d]
		if n := math.Sqrt(float64(dot(x, x))); n > 0 {
			m.invNorm[v] = 1 / n
		}
	}
}

func newFuseRAG(ix *index.Index, o Options) (Method, error) {
	if err := requireGraph(ix, o, "fuserag"); err != nil {
		return nil, err
	}
	if err := o.FuseRAG.validate(); err != nil {
		return nil, err
	}
	st, err := newStage(ix, o)
	if err != nil {
		return nil, err
	}
	return &fuseRAG{ix: ix, st: st, o: o.FuseRAG, kinds: o.GraphKinds}, nil
}

func (m *fuseRAG) Name() string { return "fuserag" }

// Evidence runs stage 1 for q: the first stage's Start best nodes, then the
// greedy walk. It returns nil for a query nothing matches.
func (m *fuseRAG) Evidence(ctx context.Context, q Query) (*graphops.Evidence, error) {
	sc, err := m.st.scores(ctx, q)
	if err != nil || sc == nil {
		return nil, err
	}
	seeds := m.st.ranking(sc, m.o.Start)
	if len(seeds) == 0 {
		return nil, nil
	}
	start := make([]int32, len(seeds))
	for i, h := range seeds {
		start[i] = h.Index
	}
	m.once.Do(m.prepare)
	rel := relevance(sc)
	d := m.ix.Meta.Dims
	scores := graphops.GreedyScores{
		Rel: func(_, v int32, _ int64) float64 { return rel[v] },
		Sim: func(u, v int32) float64 { // cosine, whatever the index's metric
			return float64(dot(m.ix.Vectors[int(u)*d:int(u+1)*d], m.ix.Vectors[int(v)*d:int(v+1)*d])) * m.invNorm[u] * m.invNorm[v]
		},
	}
	return graphops.GreedyEvidence(ctx, m.adj, start, graphops.GreedyOptions{Budget: m.o.Budget, Lambda: m.o.Lambda, Stop: m.o.Stop}, scores)
}

// relevance is rel(q, v): the first stage's score over its maximum, so
// that BM25, cosine and fused scores all weigh against novelty with the
// best at 1 (BM25 and fused scores lie in [0, 1]; negative cosines stay
// negative).
func relevance(sc []float32) []float64 {
	top := float32(0)
	for _, x := range sc {
		top = max(top, x)
	}
	out := make([]float64, len(sc))
	for i, x := range sc {
		out[i] = float64(x)
		if top > 0 {
			out[i] /= float64(top)
		}
	}
	return out
}

// Retrieve returns B_q in selection order (start nodes first), at most k;
// scores fall with the order (Budget − position), as the greedy gains need
// not.
func (m *fuseRAG) Retrieve(ctx context.Context, q Query, k int) ([]kernels.Hit, error) {
	ev, err := m.Evidence(ctx, q)
	if err != nil || ev == nil {
		return nil, err
	}
	out := make([]kernels.Hit, 0, min(k, len(ev.Nodes)))
	for i, v := range ev.Nodes[:min(k, len(ev.Nodes))] {
		out = append(out, kernels.Hit{Index: v, Score: float32(m.o.Budget - i)})
	}
	return out, nil
}

// BuildContext is S_q: the anchors chosen from B_q's passages within
// budget cl100k_base tokens (the stand-in for the decoder's tokenizer when
// no decoder is loaded).
func (m *fuseRAG) BuildContext(ctx context.Context, q Query, budget int) (*LLMContext, error) {
	if err := checkBudget(budget); err != nil {
		return nil, err
	}
	tok, err := tiktoken.CL100K()
	if err != nil {
		return nil, err
	}
	set, nodes, err := m.Anchors(ctx, q, budget, tok)
	if err != nil || set == nil {
		return &LLMContext{}, err
	}
	return &LLMContext{Text: set.Text, Tokens: set.Tokens, Nodes: nodes,
		Sections: []ContextSection{{Name: "anchors", Rows: len(set.Chosen), Tokens: set.Tokens}}}, nil
}

// Anchors runs stage 1 and builds the anchors within budget tokens of tok;
// it also returns the nodes the chosen clauses come from, in order.
func (m *fuseRAG) Anchors(ctx context.Context, q Query, budget int, tok fuseattn.TokenCounter) (*fuseattn.AnchorSet, []int32, error) {
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
	Method
	Evidence(ctx context.Context, q Query) (*graphops.Evidence, error)
}

var _ EvidenceMethod = (*fuseRAG)(nil)
