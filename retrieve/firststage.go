package retrieve

import (
	"context"
	"errors"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
	"math"
	"math/bits"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops/hnsw"
	"github.com/gleaner-rag/gleaner/graphops/ivf"
	"github.com/gleaner-rag/gleaner/index"
)

// First stages: the ranking a method starts from (StageOptions.Kind).
const (
	StageBM25   = "bm25"   // BM25 over the index's postings
	StageVector = "vector" // exact dense search over the index's vectors
	StageHybrid = "hybrid" // BM25 and vector search fused (StageOptions.Hybrid)
)

// Stages lists the first stages.
func Stages() []string { return []string{StageBM25, StageVector, StageHybrid} }

// Fusions of the hybrid first stage (HybridOptions.Fusion).
const (
	FusionConvex = "convex" // Weight·BM25/max(BM25) + (1−Weight)·minmax(vector)
	FusionRRF    = "rrf"    // Σ 1/(RRFK + rank) over the two rankings
)

// HybridOptions configure the hybrid first stage.
type HybridOptions struct {
	Fusion string  // hybrid-fusion: FusionConvex or FusionRRF
	Weight float64 // hybrid-weight: convex: BM25's weight in [0, 1]; vector search gets 1 − Weight
	RRFK   int     // rrf-k: rrf: the constant k of 1/(k + rank), ≥ 1
	Depth  int     // rrf-depth: rrf: how many results of each ranking count, ≥ 1
	Search string  // hybrid-search: SearchAuto, SearchExact, SearchHNSW or SearchIVF (hybridgraph.go)
	Ef     int     // hybrid-ef: the dense list's length: candidates the HNSW walk keeps, hits the inverted file returns
	Nprobe int     // hybrid-nprobe: lists the inverted file's probe scores
}

// DefaultHybrid is convex fusion with BM25 at 0.8 (chosen on the declared
// dev questions, benchmarks/RESULTS.md); an inverted file probes as many
// lists as method vector's (DefaultVector).
func DefaultHybrid() HybridOptions {
	return HybridOptions{Fusion: FusionConvex, Weight: 0.8, RRFK: 60, Depth: 1000, Search: SearchAuto, Ef: 256, Nprobe: DefaultVector().Nprobe}
}

// Params binds the hybrid settings.
func (o *HybridOptions) Params(p *Params) {
	p.String(&o.Fusion, "hybrid-fusion", "hybrid first stage: convex (weighted normalised scores) or rrf (reciprocal-rank fusion)", OneOf(FusionConvex, FusionRRF))
	p.Float(&o.Weight, "hybrid-weight", "convex hybrid: BM25's weight in [0,1]; vector search gets 1 − weight", Within(0.0, 1.0))
	p.Int(&o.RRFK, "rrf-k", "rrf hybrid: k in 1/(k + rank)", AtLeast(1))
	p.Int(&o.Depth, "rrf-depth", "rrf hybrid: results of each ranking that count", AtLeast(1))
	p.String(&o.Search, "hybrid-search", "hybrid ranking: auto (BM25's top list fused with the index's HNSW graph walk when built and the index has at least 32·hybrid-ef nodes, else with its inverted file's probe when built, hybrid-nprobe is at most an eighth of its lists and the rows kept at most an eighth of the nodes (the dense list: hybrid-ef raised to the depth and, under rrf, to rrf-depth; 4× that over codes), else every vector scored), exact, hnsw or ivf", OneOf(SearchAuto, SearchExact, SearchHNSW, SearchIVF))
	p.Int(&o.Ef, "hybrid-ef", "hybrid over hnsw or ivf: the dense list's length, candidates the walk keeps (raised to the depth asked, and to rrf-depth under rrf)", Within(1, hnsw.MaxEf))
	p.Int(&o.Nprobe, "hybrid-nprobe", "hybrid over ivf: lists the probe scores, best centroids first", Within(1, ivf.MaxProbe))
}

// HybridSettings names the hybrid stage's settings, for a method that
// fixes its first stage to drop them (Params.Drop): one it kept would be
// accepted and then ignored.
func HybridSettings() []string {
	var ps Params
	o := DefaultHybrid()
	o.Params(&ps)
	names := make([]string, len(ps.list))
	for i, p := range ps.list {
		names[i] = p.name
	}
	return names
}

// StageOptions choose and configure a method's first stage.
type StageOptions struct {
	Kind   string // first-stage: StageBM25, StageVector or StageHybrid
	Hybrid HybridOptions
}

// DefaultStage is BM25, every method's default first stage.
func DefaultStage() StageOptions { return StageOptions{Kind: StageBM25, Hybrid: DefaultHybrid()} }

// Params binds the first-stage settings (first-stage and the hybrid ones).
func (o *StageOptions) Params(p *Params) {
	p.String(&o.Kind, "first-stage", "the ranking the method starts from: "+strings.Join(Stages(), ", "), OneOf(Stages()...))
	o.Hybrid.Params(p)
}

// Stage is a first stage bound to an index: it scores every node for a
// query, as the similarity the graph methods need (STeX's I_sim, PPR's
// reset), and ranks nodes by that score. It is safe for concurrent use.
//
// The scores, by stage:
//   - bm25: BM25 / max BM25 of the query, in [0, 1] (0 when a node matches
//     no term);
//   - vector: the cosine (dot product of the index's vectors);
//   - hybrid convex: w·BM25/max + (1−w)·minmax(vector), in [0, 1];
//   - hybrid rrf: Σ 1/(k + rank) over BM25's and vector search's top Depth,
//     divided by 2/(k+1) so that a node first in both scores 1.
type Stage struct {
	ix   *index.Index
	be   engine.Backend
	kind string
	h    HybridOptions
	g    *hnsw.Graph // hybrid: the index's HNSW graph, nil when exact (hybridgraph.go)
	file fileSearch  // hybrid: the index's inverted file (its f nil when exact)
	dot  hnsw.Dot
}

// NewStage binds a first stage to ix; vector and hybrid run on be.
func NewStage(ix *index.Index, be engine.Backend, o StageOptions) (*Stage, error) {
	if err := Validate(&o, (*StageOptions).Params); err != nil {
		return nil, err
	}
	if be == nil && o.Kind != StageBM25 {
		return nil, ErrNoBackend
	}
	st := &Stage{ix: ix, be: be, kind: o.Kind, h: o.Hybrid}
	if o.Kind == StageHybrid {
		g, err := graphFor(ix, o.Hybrid.Search)
		if err != nil {
			return nil, err
		}
		f, err := sectionFor(ix, o.Hybrid.Search, SearchIVF, IVFOf)
		if err != nil {
			return nil, err
		}
		d := DefaultVector() // the probe's workers and rescoring are method vector's defaults
		st.g, st.dot, st.file = g, engine.DotRowsOf(be), newFileSearch(f, be, o.Hybrid.Nprobe, d.SearchWorkers, d.Rescore)
	}
	return st, nil
}

// Kind is the stage's kind (StageBM25, StageVector or StageHybrid).
func (s *Stage) Kind() string { return s.kind }

// Index is the index the stage ranks.
func (s *Stage) Index() *index.Index { return s.ix }

// Scores returns every node's first-stage score for q, or nil when q
// matches nothing (no BM25 term and no embeddable text).
//
// Under a filter (q.Allow) the scores are those of the index holding only
// the allowed nodes (BM25's statistics and every normalisation count only
// them); a node outside scores 0 (bm25, hybrid) or −Inf (vector), and
// Ranking never returns it.
func (s *Stage) Scores(ctx context.Context, q Query) (_ []float32, err error) {
	q = Visible(s.ix, q) // deleted nodes stay out

	if strings.TrimSpace(q.Text) == "" && q.Vector == nil {
		return nil, ErrEmptyQuery
	}
	ctx, end := StartSpan(ctx, "first stage", attribute.String("gleaner.stage", s.kind), attribute.Bool("gleaner.filtered", q.Allow != nil))
	defer func() { end(err) }()
	if err := CheckAllow(s.ix, q); err != nil {
		return nil, err
	}
	var lex, vec []float32
	if s.kind != StageVector {
		if lex, err = s.bm25(q); err != nil {
			return nil, err
		}
	}
	if s.kind != StageBM25 {
		if vec, err = s.vector(ctx, q); err != nil {
			return nil, err
		}
	}
	keep := q.Allow.Keep()
	switch {
	case s.kind == StageBM25:
		return lex, nil
	case s.kind == StageVector:
		return vec, nil
	case lex == nil && vec == nil:
		return nil, nil
	case s.h.Fusion == FusionRRF:
		return rrf(lex, vec, s.h.RRFK, s.h.Depth, keep), nil
	}
	return convex(lex, vec, s.h.Weight, keep), nil
}

// bm25 is BM25 divided by the query's best score; nil when nothing matches.
func (s *Stage) bm25(q Query) ([]float32, error) {
	if strings.TrimSpace(q.Text) == "" {
		return nil, nil
	}
	sc := make([]float32, s.ix.N())
	var n int
	var err error
	if q.Allow != nil {
		n, err = bm25Within(s.ix, q, sc)
	} else {
		n, err = s.ix.BM25.ScoreAll(q.Text, sc)
	}
	if err != nil || n == 0 {
		return nil, err
	}
	var hi float32
	for _, x := range sc {
		hi = max(hi, x)
	}
	for i := range sc {
		sc[i] /= hi
	}
	return sc, nil
}

// vector is the query's dot product with every node vector (−Inf for a
// node outside q.Allow); nil when the query has no embeddable term.
func (s *Stage) vector(ctx context.Context, q Query) ([]float32, error) {
	v, err := EmbedQuery(ctx, s.ix, q)
	if errors.Is(err, index.ErrEmptyEmbedding) || errors.Is(err, ErrEmptyQuery) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sc, err := DenseScores(ctx, s.be, s.ix, v)
	if err != nil || q.Allow == nil {
		return sc, err
	}
	outside(sc, q.Allow, float32(math.Inf(-1)))
	return sc, nil
}

// outside sets sc's entries of the nodes outside allow to x, a word of
// the set at a time: a filter that keeps most nodes (the live ones of an
// index with a few deleted) costs a pass over the words, not the nodes.
func outside(sc []float32, allow *filter.Set, x float32) {
	words := allow.Words()
	for wi, w := range words {
		for out := ^w; out != 0; out &= out - 1 {
			if i := wi*64 + bits.TrailingZeros64(out); i < len(sc) {
				sc[i] = x
			}
		}
	}
	for i := len(words) * 64; i < len(sc); i++ {
		sc[i] = x // past a set smaller than the index (CheckAllow refuses one): outside, as Has says
	}
}

// convex fuses max-normalised BM25 and min–max-normalised vector scores
// (over the nodes keep accepts; nil: all); either may be nil (it then
// contributes 0). A node keep refuses scores 0.
func convex(lex, vec []float32, w float64, keep func(int32) bool) []float32 {
	n := max(len(lex), len(vec))
	out := make([]float32, n)
	if lex != nil {
		for i, x := range lex {
			out[i] = float32(w) * x
		}
	}
	if vec != nil {
		lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
		for i, x := range vec {
			if keep == nil || keep(int32(i)) {
				lo, hi = min(lo, x), max(hi, x)
			}
		}
		if hi > lo {
			for i, x := range vec {
				if keep == nil || keep(int32(i)) {
					out[i] += float32(1-w) * (x - lo) / (hi - lo)
				}
			}
		}
	}
	return out
}

// rrf is reciprocal-rank fusion of the top depth of each ranking, scaled so
// a node first in both rankings scores 1.
func rrf(lex, vec []float32, k, depth int, keep func(int32) bool) []float32 {
	n := max(len(lex), len(vec))
	out := make([]float32, n)
	for i, sc := range [][]float32{lex, vec} {
		if sc == nil {
			continue
		}
		for r, h := range topPositive(sc, depth, i == 0) { // BM25 ranks only the nodes it matched
			if keep == nil || keep(h.Index) {
				out[h.Index] += rrfWeight(k, r)
			}
		}
	}
	return out
}

// rrfWeight is what rank r (from 0) adds under rrf with constant k:
// 1/(k + r + 1), scaled so that first in both rankings sums to 1 (in
// float64: k may be as large as an int holds).
func rrfWeight(k, r int) float32 {
	return float32((float64(k) + 1) / 2 / (float64(k) + float64(r) + 1))
}

// Ranking is the stage's top depth nodes by score, best first, ties by
// lower node number. Under bm25 and hybrid a node scoring 0 matched
// nothing (or is the least similar node of all) and is left out; a node
// scoring −Inf (outside a filter) is always left out.
func (s *Stage) Ranking(sc []float32, depth int) []Hit {
	if sc == nil {
		return nil
	}
	return topPositive(sc, depth, s.kind != StageVector)
}

func topPositive(sc []float32, depth int, positiveOnly bool) []Hit {
	top := engine.NewTopK(min(depth, len(sc)))
	for i, x := range sc {
		if x > 0 || !positiveOnly && !math.IsInf(float64(x), -1) {
			top.Push(int32(i), x)
		}
	}
	return top.Results()
}

// Run returns q's top depth: the first stage as a ranking, equal to
// Ranking(Scores(q), depth). A bm25 stage takes it from the postings
// (lexical.BM25.Search, MaxScore where it pays) instead of scoring every
// node; a hybrid stage over an HNSW graph or an inverted file fuses BM25's
// top list with the walk's or the probe's (hybridgraph.go), approximating
// Ranking(Scores(q)).
func (s *Stage) Run(ctx context.Context, q Query, depth int) (_ []Hit, err error) {
	q = Visible(s.ix, q) // deleted nodes stay out

	if how := s.approximate(q, depth); how != "" {
		return s.runApproxHybrid(ctx, q, depth, how)
	}
	if s.kind != StageBM25 || strings.TrimSpace(q.Text) == "" || depth <= 0 {
		sc, err := s.Scores(ctx, q)
		if err != nil {
			return nil, err
		}
		return s.Ranking(sc, depth), nil
	}
	_, end := StartSpan(ctx, "first stage", attribute.String("gleaner.stage", s.kind), attribute.Bool("gleaner.filtered", q.Allow != nil))
	defer func() { end(err) }()
	if err := CheckAllow(s.ix, q); err != nil {
		return nil, err
	}
	return s.lexicalRanking(ctx, q, depth)
}

// lexicalRanking is the bm25 stage's ranking of q's top n (BM25 / best):
// from BM25's top list, or from every match when a tie after the
// division straddles the cut.
func (s *Stage) lexicalRanking(ctx context.Context, q Query, n int) ([]Hit, error) {
	n = min(n, s.ix.N()) // n+1 must not overflow
	hits, err := searchBM25(s.ix, q, n+1)
	if err != nil || len(hits) == 0 {
		return nil, err
	}
	if top, ok := normalisedTop(hits, n); ok {
		return top, nil
	}
	sc, err := s.bm25Scored(ctx, q) // not s.Score: a hybrid stage's rrf asks for BM25's ranking
	if err != nil {
		return nil, err
	}
	defer sc.Release()
	return s.RankScored(sc, n), nil
}

// normalisedTop turns BM25's top depth+1 by raw score into the top depth
// by score / best score, as Ranking orders the bm25 stage's Scores: the
// division can make distinct raw scores equal, and equal scores rank by
// node number. Equal raw scores rank by node number in BM25's search too,
// so only a normalised tie at the cut whose raw score shares its quotient
// with a neighbouring float32 is undecidable from the top alone (a node
// further down could join the tie); it reports false there.
func normalisedTop(hits []Hit, depth int) ([]Hit, bool) {
	var out []Hit
	for _, h := range hits {
		if h.Score > 0 {
			out = append(out, Hit{Index: h.Index, Score: h.Score / hits[0].Score})
		}
	}
	if len(out) > depth {
		if cut := out[depth].Score; out[depth-1].Score == cut {
			raw, best := hits[depth].Score, hits[0].Score
			if math.Nextafter32(raw, 0)/best == cut || math.Nextafter32(raw, float32(math.Inf(1)))/best == cut {
				return nil, false
			}
		}
		out = out[:depth]
	}
	engine.SortHits(out)
	return out, true
}
