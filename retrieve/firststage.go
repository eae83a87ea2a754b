package retrieve

import (
	"context"
	"errors"
	"math"
	"strings"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels"
)

// stage is a first stage bound to an index: it scores every node for a
// query, as the similarity the graph methods need (STeX's I_sim, PPR's
// reset), and ranks nodes by that score.
//
// The scores, by stage:
//   - bm25: BM25 / max BM25 of the query, in [0, 1] (0 when a node matches
//     no term);
//   - vector: the cosine (dot product of the index's vectors);
//   - hybrid convex: w·BM25/max + (1−w)·minmax(vector), in [0, 1];
//   - hybrid rrf: Σ 1/(k + rank) over BM25's and vector search's top Depth,
//     divided by 2/(k+1) so that a node first in both scores 1.
type stage struct {
	ix   *index.Index
	be   engine.Backend
	kind string
	h    HybridOptions
}

func newStage(ix *index.Index, o Options) (*stage, error) {
	if err := o.validateStage(); err != nil {
		return nil, err
	}
	if o.Backend == nil && o.FirstStage != StageBM25 {
		return nil, errNoBackend
	}
	return &stage{ix: ix, be: o.Backend, kind: o.FirstStage, h: o.Hybrid}, nil
}

// scores returns every node's first-stage score for q, or nil when q
// matches nothing (no BM25 term and no embeddable text).
func (s *stage) scores(ctx context.Context, q Query) ([]float32, error) {
	if strings.TrimSpace(q.Text) == "" && q.Vector == nil {
		return nil, ErrEmptyQuery
	}
	var lex, vec []float32
	var err error
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
	switch {
	case s.kind == StageBM25:
		return lex, nil
	case s.kind == StageVector:
		return vec, nil
	case lex == nil && vec == nil:
		return nil, nil
	case s.h.Fusion == FusionRRF:
		return rrf(lex, vec, s.h.RRFK, s.h.Depth), nil
	}
	return convex(lex, vec, s.h.Weight), nil
}

// bm25 is BM25 divided by the query's best score; nil when nothing matches.
func (s *stage) bm25(q Query) ([]float32, error) {
	if strings.TrimSpace(q.Text) == "" {
		return nil, nil
	}
	sc := make([]float32, s.ix.N())
	n, err := s.ix.BM25.ScoreAll(q.Text, sc)
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

// vector is the query's dot product with every node vector; nil when the
// query has no embeddable term.
func (s *stage) vector(ctx context.Context, q Query) ([]float32, error) {
	v, err := (&vector{ix: s.ix}).embed(ctx, q)
	if errors.Is(err, index.ErrEmptyEmbedding) || errors.Is(err, ErrEmptyQuery) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return denseScores(ctx, s.be, s.ix, v)
}

// convex fuses max-normalised BM25 and min–max-normalised vector scores;
// either may be nil (it then contributes 0).
func convex(lex, vec []float32, w float64) []float32 {
	n := max(len(lex), len(vec))
	out := make([]float32, n)
	if lex != nil {
		for i, x := range lex {
			out[i] = float32(w) * x
		}
	}
	if vec != nil {
		lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
		for _, x := range vec {
			lo, hi = min(lo, x), max(hi, x)
		}
		if hi > lo {
			for i, x := range vec {
				out[i] += float32(1-w) * (x - lo) / (hi - lo)
			}
		}
	}
	return out
}

// rrf is reciprocal-rank fusion of the top depth of each ranking, scaled so
// a node first in both rankings scores 1.
func rrf(lex, vec []float32, k, depth int) []float32 {
	n := max(len(lex), len(vec))
	out := make([]float32, n)
	scale := (float64(k) + 1) / 2 // float64: k may be as large as an int holds
	for i, sc := range [][]float32{lex, vec} {
		if sc == nil {
			continue
		}
		for r, h := range topPositive(sc, depth, i == 0) { // BM25 ranks only the nodes it matched
			out[h.Index] += float32(scale / (float64(k) + float64(r) + 1))
		}
	}
	return out
}

// ranking is the stage's top depth nodes by score, best first, ties by
// lower node number. Under bm25 and hybrid a node scoring 0 matched
// nothing (or is the least similar node of all) and is left out.
func (s *stage) ranking(sc []float32, depth int) []kernels.Hit {
	if sc == nil {
		return nil
	}
	return topPositive(sc, depth, s.kind != StageVector)
}

func topPositive(sc []float32, depth int, positiveOnly bool) []kernels.Hit {
	top := kernels.NewTopK(min(depth, len(sc)))
	for i, x := range sc {
		if x > 0 || !positiveOnly {
			top.Push(int32(i), x)
		}
	}
	return top.Results()
}

// run scores q and returns its top depth: the first stage as a ranking.
func (s *stage) run(ctx context.Context, q Query, depth int) ([]kernels.Hit, error) {
	sc, err := s.scores(ctx, q)
	if err != nil {
		return nil, err
	}
	return s.ranking(sc, depth), nil
}
