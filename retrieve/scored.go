package retrieve

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/models/lexical"
)

// Scored is one query's first-stage scores (Stage.Score).
type Scored struct {
	// Of is every node's score, as Stage.Scores returns them.
	Of []float32
	// Matched lists the nodes scoring above 0, in no order, when the
	// stage knows them (bm25); nil: any node may score.
	Matched []int32
	m       *lexical.Matches
}

// Release returns a pooled array; Of and Matched may not be used after.
// It may be called on nil and more than once.
func (s *Scored) Release() {
	if s != nil && s.m != nil {
		s.m.Release()
		*s = Scored{}
	}
}

// Score is Scores for callers that read a few nodes' scores or walk the
// matched ones: under the bm25 stage the scores fill a pooled array and
// Matched lists the nodes, so a query costs its postings rather than the
// number of nodes. It returns nil when q matches nothing; the caller
// releases a non-nil result.
func (s *Stage) Score(ctx context.Context, q Query) (_ *Scored, err error) {
	q = Visible(s.ix, q) // deleted nodes stay out

	if s.kind != StageBM25 || strings.TrimSpace(q.Text) == "" {
		sc, err := s.Scores(ctx, q)
		if err != nil || sc == nil {
			return nil, err
		}
		return &Scored{Of: sc}, nil
	}
	return s.bm25Scored(ctx, q)
}

// bm25Scored is the bm25 stage's Score of q, whatever the stage's kind
// (the hybrid stage's rrf fusion ranks BM25's list as the bm25 stage
// does): the matched nodes' BM25 / the query's best, from the postings.
func (s *Stage) bm25Scored(ctx context.Context, q Query) (_ *Scored, err error) {
	_, end := StartSpan(ctx, "first stage", attribute.String("gleaner.stage", StageBM25), attribute.Bool("gleaner.filtered", q.Allow != nil))
	defer func() { end(err) }()
	if err := CheckAllow(s.ix, q); err != nil {
		return nil, err
	}
	var sub *lexical.Subset
	if q.Allow != nil {
		if sub, err = subsetOf(s.ix, q); err != nil {
			return nil, err
		}
	}
	m := s.ix.BM25.Match(q.Text, sub)
	if len(m.Docs) == 0 {
		m.Release()
		return nil, nil
	}
	var hi float32
	for _, d := range m.Docs {
		hi = max(hi, m.Score[d])
	}
	for _, d := range m.Docs { // as bm25: BM25 / the query's best
		m.Score[d] /= hi
	}
	return &Scored{Of: m.Score, Matched: m.Docs, m: m}, nil
}

// RankScored is Ranking(sc.Of, depth), walking only the matched nodes
// when sc lists them.
func (s *Stage) RankScored(sc *Scored, depth int) []Hit {
	if sc == nil {
		return nil
	}
	if sc.Matched == nil {
		return s.Ranking(sc.Of, depth)
	}
	top := engine.NewTopK(min(depth, len(sc.Of)))
	for _, v := range sc.Matched {
		if x := sc.Of[v]; x > 0 {
			top.Push(v, x)
		}
	}
	return top.Results()
}
