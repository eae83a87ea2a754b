package retrieve

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops/hnsw"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models/lexical"
)

// The hybrid first stage over an HNSW graph or an inverted file. Scores
// fuses BM25 with the cosine of every node: at 10⁶ passages that scan is
// 100 ms a query. Run instead fuses BM25's top list with an approximate
// dense top list (the graph walk's, or the inverted file's probe), the way
// a search engine merges two top lists:
//
//   - convex: the min–max normalisation needs the cosine's range over
//     every node; its top is the dense list's best, its bottom the best of
//     a search for −q (a short walk, or a probe of as many lists).
//     Candidates are the union of the two lists, each scored exactly (BM25
//     from the postings, the cosine by a dot product). A node in neither
//     list scores at most w·b_K/max + (1−w)·norm(c_K), b_K and c_K the
//     lists' last scores; BM25's list grows until the depth-th candidate
//     beats that bound (or holds every match), so that no node outside the
//     lists outranks them unless the dense search missed it (or the list
//     reached maxHybridList).
//   - rrf: the fusion of BM25's and the dense list's top rrf-depth.
//
// What is approximate is the dense search: a node it misses is ranked on
// BM25 alone, and the range is the searches' (benchmarks/scale measures
// the top-10 overlap with the exact fusion). A filtered query scans, as
// method vector.

// maxHybridList bounds BM25's list (or 4·depth when that is longer), so
// that a query's work is bounded: past it the lists' fusion is returned
// as it stands, though a node outside them could still reach the bound.
const maxHybridList = 1 << 16

// approximate says which structure Run ranks q's dense side on:
// SearchHNSW (the graph walk), SearchIVF (the inverted file's probe), or
// "" (every vector scored). Search auto takes the graph where its walk
// pays, else the file where its probe does.
func (s *Stage) approximate(q Query, depth int) string {
	if q.Allow != nil || strings.TrimSpace(q.Text) == "" || depth <= 0 || depth > hnsw.MaxEf ||
		s.h.Fusion == FusionRRF && s.h.Depth > hnsw.MaxEf { // a dense list that long is a scan's
		return ""
	}
	return denseOn(s.h.Search, s.g, s.file, s.dot, s.ix.N(), s.walkEf(depth), s.walkEf(depth))
}

// walkEf is the dense list's length for a ranking of depth: the walk's
// ef, or the file's hits. approximate has kept depth and rrf-depth within
// hnsw.MaxEf, so the length is too.
func (s *Stage) walkEf(depth int) int {
	if s.h.Fusion == FusionRRF {
		return max(s.h.Ef, s.h.Depth, depth)
	}
	return max(s.h.Ef, depth)
}

// runApproxHybrid is Run with the dense side on the structure how names
// (approximate).
func (s *Stage) runApproxHybrid(ctx context.Context, q Query, depth int, how string) (_ []Hit, err error) {
	ctx, end := StartSpan(ctx, "first stage", attribute.String("gleaner.stage", s.kind), attribute.String("gleaner.dense", how))
	defer func() { end(err) }()
	qv, err := EmbedQuery(ctx, s.ix, q)
	var vec []Hit
	switch {
	case errors.Is(err, index.ErrEmptyEmbedding): // no cosine: BM25's ranking fused with nothing
	case err != nil:
		return nil, err
	default:
		var lexList <-chan []Hit
		k := max(4*depth, 64)
		if s.h.Fusion == FusionConvex {
			lexList = s.lexicalListAside(q, k)
		}
		if vec, err = s.denseTop(how, qv, s.walkEf(depth)); err != nil {
			return nil, err
		}
		if lexList != nil && vec != nil {
			low, err := s.rangeBottom(how, qv) // before BM25's list is awaited: another core may still be on it
			if err != nil {
				return nil, err
			}
			return s.fuseConvex(ctx, q, qv, vec, low, <-lexList, k, depth)
		}
	}
	if s.h.Fusion == FusionRRF {
		return s.rrfLists(ctx, q, vec, depth)
	}
	return s.lexicalOnly(ctx, q, depth)
}

// denseTop is q's approximate best n rows on the structure how names.
func (s *Stage) denseTop(how string, q []float32, n int) ([]Hit, error) {
	if how == SearchIVF {
		return s.file.top(s.ix.Vectors, q, n, s.file.nprobe)
	}
	return s.g.Search(s.ix.Vectors, q, n, n, s.dot)
}

// rangeBottom is the approximate best of −q on the structure how names:
// the bottom of the cosine's range. Only its best counts, so the walk
// keeps an eighth of the candidates; the probe scores as many lists as the
// top's, so that probing every list gives the scan's range exactly.
func (s *Stage) rangeBottom(how string, q []float32) ([]Hit, error) {
	neg := make([]float32, len(q))
	for i, x := range q {
		neg[i] = -x
	}
	if how == SearchIVF {
		return s.file.top(s.ix.Vectors, neg, 1, s.file.nprobe)
	}
	return s.g.Search(s.ix.Vectors, neg, 1, max(s.h.Ef/8, 1), s.dot)
}

// lexicalListAside starts BM25's top k for q on another goroutine, so
// that on a machine with a free core it costs no time beside the walk; the
// channel (buffered: nobody has to receive) gets the list.
func (s *Stage) lexicalListAside(q Query, k int) <-chan []Hit {
	ch := make(chan []Hit, 1)
	go func() { ch <- s.ix.BM25.Search(q.Text, k) }() // MaxScore where it pays
	return ch
}

// fuseConvex is the convex fusion of BM25's top k (lex) with the dense
// list (vec; low, the best of −q), growing BM25's list until the fusion
// is decided.
func (s *Stage) fuseConvex(ctx context.Context, q Query, qv []float32, vec, low, lex []Hit, k, depth int) ([]Hit, error) {
	f := newConvexLists(s, q, qv, vec, low)
	top, ok := f.fuse(lex, k, depth) // most queries stop here
	if ok || len(lex) < k || k >= maxHybridList {
		return top, nil
	}
	m := s.ix.BM25.Match(q.Text, nil) // every match scored once, then longer lists from it
	defer m.Release()
	for k < maxHybridList {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		k = min(4*k, maxHybridList)
		lex = topMatches(m, k)
		if top, ok = f.fuse(lex, k, depth); ok || len(lex) < k { // a longer list cannot help
			return top, nil
		}
	}
	return top, nil // at the list's bound (maxHybridList)
}

// topMatches is BM25's top k from its scored matches, as Search ranks.
func topMatches(m *lexical.Matches, k int) []Hit {
	top := engine.NewTopK(k)
	for _, d := range m.Docs {
		top.Push(d, m.Score[d])
	}
	return top.Results()
}

// lexicalOnly is the convex fusion of a query with no embeddable term:
// w·BM25/max for every node, in BM25's order. A weight of 0 scores every
// node 0, which ranks none. A tie at the cut after the division and the
// weight (a node further down could join it) is left to the scan.
func (s *Stage) lexicalOnly(ctx context.Context, q Query, depth int) ([]Hit, error) {
	w := float32(s.h.Weight)
	if w == 0 {
		return nil, nil
	}
	hits, err := searchBM25(s.ix, q, depth+1)
	if err != nil || len(hits) == 0 {
		return nil, err
	}
	out := make([]Hit, 0, len(hits))
	for _, h := range hits {
		if x := w * (h.Score / hits[0].Score); x > 0 {
			out = append(out, Hit{Index: h.Index, Score: x})
		}
	}
	engine.SortHits(out)
	if len(out) > depth {
		if out[depth-1].Score == out[depth].Score {
			return s.scanRanking(ctx, q, depth)
		}
		out = out[:depth]
	}
	return out, nil
}

// scanRanking is Ranking(Scores(q), depth).
func (s *Stage) scanRanking(ctx context.Context, q Query, depth int) ([]Hit, error) {
	sc, err := s.Scores(ctx, q)
	if err != nil {
		return nil, err
	}
	return s.Ranking(sc, depth), nil
}

// rrfLists is rrf over BM25's top Depth and the dense list's.
func (s *Stage) rrfLists(ctx context.Context, q Query, vec []Hit, depth int) ([]Hit, error) {
	lex, err := s.lexicalRanking(ctx, q, s.h.Depth)
	if err != nil {
		return nil, err
	}
	fused := map[int32]float32{}
	for _, list := range [][]Hit{lex, vec[:min(len(vec), s.h.Depth)]} {
		for r, h := range list {
			fused[h.Index] += rrfWeight(s.h.RRFK, r)
		}
	}
	top := engine.NewTopK(depth)
	for v, x := range fused {
		top.Push(v, x)
	}
	return top.Results(), nil
}

// convexLists fuses BM25's list with the dense list under convex fusion.
type convexLists struct {
	s       *Stage
	terms   []int
	qv      []float32
	vec     []Hit
	w, wv   float32 // BM25's weight, the cosine's
	lo, hi  float32 // the cosine's range: the dense searches' ends, widened by any candidate's
	cos     map[int32]float32
	lexical map[int32]float32 // raw BM25 of the dense list's nodes
}

func newConvexLists(s *Stage, q Query, qv []float32, vec, low []Hit) *convexLists {
	f := &convexLists{s: s, terms: s.ix.BM25.TermIDs(q.Text), qv: qv, vec: vec, w: float32(s.h.Weight), wv: float32(1 - s.h.Weight),
		cos: map[int32]float32{}, lexical: map[int32]float32{}}
	if len(vec) > 0 {
		f.hi = vec[0].Score
		f.lo = vec[len(vec)-1].Score
	}
	if len(low) > 0 {
		f.lo = min(f.lo, -low[0].Score)
	}
	for _, h := range vec {
		f.cos[h.Index] = h.Score
		f.lexical[h.Index] = s.ix.BM25.ScoreDoc(f.terms, uint32(h.Index))
	}
	return f
}

// cosine is node v's cosine with the query, computed once.
func (f *convexLists) cosine(v int32) float32 {
	if c, ok := f.cos[v]; ok {
		return c
	}
	out := []float32{0}
	d := f.s.ix.Meta.Dims
	if f.s.dot != nil {
		f.s.dot(f.s.ix.Vectors, d, []int32{v}, f.qv, out)
	} else {
		hnsw.GoDot(f.s.ix.Vectors, d, []int32{v}, f.qv, out)
	}
	f.cos[v] = out[0]
	return out[0]
}

// fuse scores the union of BM25's top k (lex) and the dense list, and
// returns its top depth when no node outside can beat it.
func (f *convexLists) fuse(lex []Hit, k, depth int) ([]Hit, bool) {
	var best float32
	if len(lex) > 0 {
		best = lex[0].Score
	}
	raw := make(map[int32]float32, len(lex)+len(f.vec))
	for _, h := range lex {
		raw[h.Index] = h.Score
		f.lo, f.hi = min(f.lo, f.cosine(h.Index)), max(f.hi, f.cosine(h.Index))
	}
	for v, b := range f.lexical {
		raw[v] = b
	}
	top := engine.NewTopK(depth)
	for v, b := range raw {
		if x := f.score(b, best, f.cos[v]); x > 0 {
			top.Push(v, x)
		}
	}
	hits := top.Results()
	var bK float32 // no node outside BM25's list matches when the list is short
	if len(lex) == k {
		bK = lex[k-1].Score
	}
	cK := f.lo // the dense list's last: with the range's bottom, a node below it normalises to at most this
	if len(f.vec) > 0 {
		cK = f.vec[len(f.vec)-1].Score
	}
	bound := f.score(bK, best, cK)
	done := bound <= 0 || len(hits) == depth && hits[depth-1].Score > bound
	return hits, done
}

// score is convex's fusion of a raw BM25 score b (best: the query's best)
// and a cosine c, in convex's float32 arithmetic.
func (f *convexLists) score(b, best, c float32) float32 {
	var x float32
	if best > 0 {
		x = float32(f.w * (b / best)) // rounded here, as convex stores it: never fused with the add below
	}
	if f.hi > f.lo {
		x += f.wv * (max(c, f.lo) - f.lo) / (f.hi - f.lo)
	}
	return x
}
