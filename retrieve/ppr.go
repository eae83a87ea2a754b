package retrieve

import (
	"context"
	"math"
	"sync"

	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels"
)

func init() {
	mustRegister("ppr", newPPR)
	// ppr-bm25 is HippoRAG 2's baseline as gleaner first ran it: the dense
	// reset over BM25 scores, whatever the configured first stage and reset.
	mustRegister("ppr-bm25", func(ix *index.Index, o Options) (Method, error) {
		o.FirstStage, o.PPR.Reset = StageBM25, ResetDense
		m, err := newPPR(ix, o)
		if err == nil {
			m.(*ppr).name = "ppr-bm25"
		}
		return m, err
	})
}

// pprPassageMass is HippoRAG 2's passage node weight (docs/methods.md §6). It
// cancels once the reset is normalised; it is kept to mirror the reference.
const pprPassageMass = 0.05

// ppr is personalized PageRank over the index's graph view
// (Options.GraphKinds, default all), passages ranked by their PageRank.
// The restart vector comes from the first stage (Options.FirstStage):
//   - ResetSeeds (default): its top PPR.Seeds results, weighted by score or
//     by 1/rank; nothing else restarts the walk;
//   - ResetDense: HippoRAG 2's, every passage with 0.05 × its min–max-
//     normalised score. Without HippoRAG's phrase nodes to carry the seeds
//     this reset is nearly flat, and the walk drifts to hubs.
type ppr struct {
	name  string
	ix    *index.Index
	st    *stage
	o     PPROptions
	kinds []string
	once  sync.Once
	adj   *graphops.Adjacency
}

func newPPR(ix *index.Index, o Options) (Method, error) {
	if err := requireGraph(ix, o, "ppr"); err != nil {
		return nil, err
	}
	st, err := newStage(ix, o)
	if err != nil {
		return nil, err
	}
	if err := o.PPR.validate(); err != nil {
		return nil, err
	}
	return &ppr{name: "ppr", ix: ix, st: st, o: o.PPR, kinds: o.GraphKinds}, nil
}

// maxPPRIter bounds the iterations any damping may ask for.
const maxPPRIter = 1_000_000

func (m *ppr) Name() string { return m.name }

func (m *ppr) Retrieve(ctx context.Context, q Query, k int) ([]kernels.Hit, error) {
	sc, err := m.st.scores(ctx, q)
	if err != nil || sc == nil {
		return nil, err
	}
	reset := m.reset(sc)
	if reset == nil {
		return nil, nil
	}
	m.once.Do(func() { m.adj = m.ix.View(m.kinds...) })
	po := graphops.DefaultPPROptions()
	po.Damping = m.o.Damping
	// The error shrinks by d per iteration: allow twice the iterations a
	// damping close to 1 needs to reach the tolerance, capped so that a
	// damping of 1-1e-12 ends in ErrNoConvergence rather than running on.
	need := 2*math.Log(po.Tol)/math.Log(m.o.Damping) + 100
	po.MaxIter = max(po.MaxIter, int(min(need, maxPPRIter)))
	pi, _, err := graphops.PersonalizedPageRank(ctx, m.adj, reset, po)
	if err != nil {
		return nil, err
	}
	top := kernels.NewTopK(min(k, len(pi)))
	for v, x := range pi {
		top.Push(int32(v), float32(x))
	}
	return top.Results(), nil
}

// reset builds the restart vector from the first-stage scores; nil when
// nothing distinguishes any passage.
func (m *ppr) reset(sc []float32) []float64 {
	r := make([]float64, len(sc))
	if m.o.Reset == ResetDense {
		for i, x := range sc {
			r[i] = float64(x)
		}
		return minMaxScaled(r, pprPassageMass)
	}
	seeds := m.st.ranking(sc, m.o.Seeds)
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

// minMaxScaled maps scores to [0, mass] by min–max normalisation; all
// equal scores give every passage mass (HippoRAG's min–max then yields
// ones: a uniform reset, plain PageRank).
func minMaxScaled(s []float64, mass float64) []float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range s {
		lo, hi = min(lo, x), max(hi, x)
	}
	if !(hi > lo) {
		for i := range s {
			s[i] = mass
		}
		return s
	}
	for i, x := range s {
		s[i] = mass * (x - lo) / (hi - lo)
	}
	return s
}
