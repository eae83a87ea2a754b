package retrieve

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"

	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels"
)

func init() {
	mustRegister("ppr", func(ix *index.Index, o Options) (Method, error) { return newPPR(ix, seedVector, o), nil })
	mustRegister("ppr-bm25", func(ix *index.Index, o Options) (Method, error) { return newPPR(ix, seedBM25, o), nil })
}

// HippoRAG 2's settings (methods.md §6), adapted to corpus graphs as
// FastInsight did: every passage is a restart node.
const (
	pprDamping     = 0.5
	pprPassageMass = 0.05
)

type seedKind int

const (
	seedVector seedKind = iota
	seedBM25
)

// ppr is the HippoRAG-style baseline: passage restart mass 0.05 ×
// min–max-normalised first-stage score (dense over all passages, or BM25
// over the passages it matches), personalized PageRank with damping 0.5
// over the undirected weighted graph (Options.GraphKinds, default all), passages ranked by
// their PageRank. (The 0.05 factor cancels once the reset vector is
// normalised; it is kept to mirror HippoRAG's weighting.)
type ppr struct {
	ix    *index.Index
	seeds seedKind
	kinds []string
	once  sync.Once
	adj   *graphops.Adjacency
}

func newPPR(ix *index.Index, s seedKind, o Options) *ppr {
	return &ppr{ix: ix, seeds: s, kinds: o.GraphKinds}
}

func (m *ppr) Name() string {
	if m.seeds == seedBM25 {
		return "ppr-bm25"
	}
	return "ppr"
}

func (m *ppr) Retrieve(ctx context.Context, q Query, k int) ([]kernels.Hit, error) {
	if strings.TrimSpace(q.Text) == "" && q.Vector == nil {
		return nil, ErrEmptyQuery
	}
	m.once.Do(func() { m.adj = m.ix.Adjacency(true, m.kinds...) })
	reset, err := m.reset(ctx, q)
	if err != nil || reset == nil {
		return nil, err
	}
	pi, _, err := graphops.PersonalizedPageRank(ctx, m.adj, reset, graphops.PPROptions{Damping: pprDamping})
	if err != nil {
		return nil, err
	}
	top := kernels.NewTopK(k)
	for v, x := range pi {
		top.Push(int32(v), float32(x))
	}
	return top.Results(), nil
}

// reset builds the restart vector; nil when the query matches nothing.
func (m *ppr) reset(ctx context.Context, q Query) ([]float64, error) {
	scores := make([]float64, m.ix.N())
	if m.seeds == seedBM25 {
		for _, h := range m.ix.BM25.Search(q.Text, m.ix.N()) {
			scores[h.Index] = float64(h.Score)
		}
	} else {
		v, err := (&vector{ix: m.ix}).embed(ctx, q)
		if errors.Is(err, index.ErrEmptyEmbedding) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		s := make([]float32, m.ix.N())
		if err := kernels.ScoreAll(m.ix.Vectors, m.ix.N(), m.ix.Meta.Dims, v, s); err != nil {
			return nil, err
		}
		for i, x := range s {
			scores[i] = float64(x)
		}
	}
	return minMaxScaled(scores, pprPassageMass), nil
}

// minMaxScaled maps scores to [0, mass] by min–max normalisation; nil when
// they are all equal (nothing distinguishes any passage).
func minMaxScaled(s []float64, mass float64) []float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range s {
		lo, hi = min(lo, x), max(hi, x)
	}
	if !(hi > lo) {
		return nil
	}
	for i, x := range s {
		s[i] = mass * (x - lo) / (hi - lo)
	}
	return s
}
