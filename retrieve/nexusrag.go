package retrieve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels"
	"github.com/gleaner-rag/gleaner/models/ner"
)

func init() {
	mustRegister("nexusrag", func(ix *index.Index, o Options) (Method, error) { return newTriGraphMethod(ix, o, true) })
	mustRegister("linearrag", func(ix *index.Index, o Options) (Method, error) { return newTriGraphMethod(ix, o, false) })
}

// ErrNoTriGraph is returned when nexusrag or linearrag runs on an index
// without a Tri-Graph.
var ErrNoTriGraph = errors.New("the index has no tri-graph: build one with 'gleaner graph build --kind trigraph --index <dir>' (index.SetTriGraph)")

// triGraphMethod is NexusRAG (nexus: neighbour clamp, W hop, exp passage
// initialisation) or LinearRAG (plain products, passage_ratio), over the
// index's Tri-Graph (docs/methods.md §2.4–2.5): question NER → seed
// entities by cosine → propagation through sentences → passage restart
// mass → personalized PageRank over entities and passages.
type triGraphMethod struct {
	nexus bool
	ix    *index.Index
	tg    *index.TriGraph
	o     TriGraphOptions
	be    Options
	st    *stage
	seg   *ner.Segmenter
	once  sync.Once
	plan  *graphops.PPRPlan
	adjEr error
	exact struct {
		once sync.Once
		ids  map[string]int32 // lowercased surface string → its first entity
	}
}

func newTriGraphMethod(ix *index.Index, o Options, nexus bool) (Method, error) {
	name := map[bool]string{true: "nexusrag", false: "linearrag"}[nexus]
	if ix.TriGraph == nil {
		return nil, fmt.Errorf("retrieve: %s: %w", name, ErrNoTriGraph)
	}
	if o.Backend == nil {
		return nil, errNoBackend
	}
	if err := o.TriGraph.validate(); err != nil {
		return nil, err
	}
	if o.TriGraph.NER == nil {
		ex, err := indexExtractor(ix)
		if err != nil {
			return nil, fmt.Errorf("retrieve: %s: question NER: %w", name, err)
		}
		o.TriGraph.NER = ex
	}
	seg, err := ner.NewSegmenter()
	if err != nil {
		return nil, err
	}
	so := o
	so.FirstStage = o.TriGraph.PassageScores
	st, err := newStage(ix, so)
	if err != nil {
		return nil, err
	}
	return &triGraphMethod{nexus: nexus, ix: ix, tg: ix.TriGraph, o: o.TriGraph, be: o, st: st, seg: seg}, nil
}

// indexExtractor rebuilds the extractor the Tri-Graph was built with.
func indexExtractor(ix *index.Index) (ner.EntityExtractor, error) {
	var titles []string
	if name := ix.TriGraph.Meta.NER; name == "titles" || name == "both" {
		for i := 0; i < ix.N(); i++ {
			titles = append(append(titles, ix.Title(i)), ix.Aliases(i)...)
		}
	}
	return ner.New(ix.TriGraph.Meta.NER, titles)
}

func (m *triGraphMethod) Name() string {
	if m.nexus {
		return "nexusrag"
	}
	return "linearrag"
}

// Retrieve implements Method.
func (m *triGraphMethod) Retrieve(ctx context.Context, q Query, k int) ([]kernels.Hit, error) {
	hits, _, err := m.Trace(ctx, q, k)
	return hits, err
}

// TriGraphTrace tells what one nexusrag/linearrag query did: the question's
// entities, the seeds they linked to, the propagation, and how long each
// stage took.
type TriGraphTrace struct {
	QuestionEntities []string
	Seeds            []TraceSeed
	Rounds           int
	Active           []graphops.Activation // every activated entity's last write
	Fallback         bool                  // no seed: the dense ranking was returned
	Stages           map[string]time.Duration
}

// TraceSeed is a question entity linked to its nearest Tri-Graph entity.
type TraceSeed struct {
	Mention string
	Entity  string
	Score   float64
}

// Trace retrieves like Retrieve and reports what happened.
func (m *triGraphMethod) Trace(ctx context.Context, q Query, k int) ([]kernels.Hit, *TriGraphTrace, error) {
	tr := &TriGraphTrace{Stages: map[string]time.Duration{}}
	clock := time.Now()
	lap := func(stage string) { now := time.Now(); tr.Stages[stage] += now.Sub(clock); clock = now }
	if strings.TrimSpace(q.Text) == "" {
		return nil, tr, fmt.Errorf("retrieve: %s needs question text (its entities seed the walk): %w", m.Name(), ErrEmptyQuery)
	}
	qv, err := m.queryVector(ctx, q)
	if err != nil {
		return nil, tr, err
	}
	dpr, signal, err := m.passageScores(ctx, q, qv)
	if err != nil {
		return nil, tr, err
	}
	lap("embed")
	if tr.QuestionEntities, err = m.questionEntities(ctx, q.Text); err != nil {
		return nil, tr, err
	}
	lap("ner")
	seeds, err := m.link(ctx, tr)
	if err != nil {
		return nil, tr, err
	}
	lap("seeds")
	if len(seeds) == 0 {
		tr.Fallback = true
		if !signal {
			return nil, tr, nil // nothing to rank by, as bm25 and vector answer such a question
		}
		return topPassages(dpr, k), tr, nil
	}
	hits, err := m.walk(ctx, qv, dpr, signal, seeds, k, tr, lap)
	return hits, tr, err
}

// passageScores is every passage's similarity to the question: the dense
// cosine, or the configured first stage. signal is false when the question
// matches nothing (a zero query vector, no BM25 term); the scores are then
// zeros.
func (m *triGraphMethod) passageScores(ctx context.Context, q Query, qv []float32) ([]float32, bool, error) {
	if m.o.PassageScores == StageVector {
		if _, ok := unit(qv); !ok {
			return make([]float32, m.ix.N()), false, nil
		}
		sc, err := denseScores(ctx, m.be.Backend, m.ix, qv)
		return sc, true, err
	}
	sc, err := m.st.scores(ctx, q)
	if sc == nil && err == nil {
		return make([]float32, m.ix.N()), false, nil
	}
	return sc, true, err
}

// queryVector embeds the question; a question the embedder cannot
// represent gets a zero vector (every similarity 0), not an error, since
// its entities may still link.
func (m *triGraphMethod) queryVector(ctx context.Context, q Query) ([]float32, error) {
	var v []float32
	var err error
	if q.Vector != nil {
		v, err = m.ix.PrepareQueryVector(q.Vector)
	} else {
		v, err = m.ix.EmbedQuery(ctx, q.Text)
	}
	if errors.Is(err, index.ErrEmptyEmbedding) {
		return make([]float32, m.ix.Meta.Dims), nil
	}
	return v, err
}

// questionEntities runs the NER over the question's sentences and returns
// the distinct lowercased entities, in order (the reference lowercases).
func (m *triGraphMethod) questionEntities(ctx context.Context, text string) ([]string, error) {
	sents, err := ner.Extract(ctx, m.seg, m.o.NER, text)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, s := range sents {
		for _, e := range s.Entities {
			if l := strings.ToLower(e); !seen[l] {
				seen[l] = true
				out = append(out, l)
			}
		}
	}
	return out, nil
}

// link maps each question entity to the Tri-Graph entity of highest cosine
// (no threshold, as the reference). An entity whose lowercased string
// equals the mention's links at once with score 1: with a case-insensitive
// embedder (LSA) identical text is the argmax, and among the entities tied
// at cosine 1 (LSA stems "Girls" and "Girl" alike) it is the right one. A
// mention the embedder cannot represent links to nothing.
func (m *triGraphMethod) link(ctx context.Context, tr *TriGraphTrace) ([]graphops.Seed, error) {
	if len(tr.QuestionEntities) == 0 || len(m.tg.Entities) == 0 {
		return nil, nil
	}
	var seeds []graphops.Seed
	var rest []string
	for _, mention := range tr.QuestionEntities {
		if e, ok := m.exactEntity(mention); ok {
			seeds = append(seeds, graphops.Seed{Entity: e, Score: 1})
			tr.Seeds = append(tr.Seeds, TraceSeed{Mention: mention, Entity: m.tg.Entities[e], Score: 1})
		} else {
			rest = append(rest, mention)
		}
	}
	if len(rest) == 0 {
		return seeds, nil
	}
	more, err := m.linkByCosine(ctx, rest, tr)
	return append(seeds, more...), err
}

// exactEntity looks a lowercased mention up among the entities.
func (m *triGraphMethod) exactEntity(mention string) (int32, bool) {
	m.exact.once.Do(func() {
		m.exact.ids = make(map[string]int32, len(m.tg.Entities))
		for e, s := range m.tg.Entities {
			if _, dup := m.exact.ids[strings.ToLower(s)]; !dup {
				m.exact.ids[strings.ToLower(s)] = int32(e)
			}
		}
	})
	e, ok := m.exact.ids[mention]
	return e, ok
}

// linkByCosine links mentions to the entity of highest cosine (ties: the
// lower entity number).
func (m *triGraphMethod) linkByCosine(ctx context.Context, mentions []string, tr *TriGraphTrace) ([]graphops.Seed, error) {
	d := m.ix.Meta.Dims
	vs, err := m.ix.Embedder.Embed(ctx, mentions)
	if err != nil {
		return nil, fmt.Errorf("retrieve: embedding question entities: %w", err)
	}
	if len(vs) != len(mentions)*d {
		return nil, fmt.Errorf("retrieve: embedder %s returned %d values for %d entities of %d dims", m.ix.Embedder.Name(), len(vs), len(mentions), d)
	}
	var seeds []graphops.Seed
	scores := make([]float32, len(m.tg.Entities))
	for i, mention := range mentions {
		v, ok := unit(vs[i*d : (i+1)*d])
		if !ok {
			continue // zero or non-finite vector: nothing to link
		}
		if err := kernels.ScoreAll(m.tg.EntityVecs, len(m.tg.Entities), d, v, scores); err != nil {
			return nil, err
		}
		best := argmax(scores)
		seeds = append(seeds, graphops.Seed{Entity: int32(best), Score: float64(scores[best])})
		tr.Seeds = append(tr.Seeds, TraceSeed{Mention: mention, Entity: m.tg.Entities[best], Score: float64(scores[best])})
	}
	return seeds, nil
}

// walk propagates from the seeds, sets the restart vector and ranks the
// passages by personalized PageRank.
func (m *triGraphMethod) walk(ctx context.Context, qv, dpr []float32, signal bool, seeds []graphops.Seed, k int, tr *TriGraphTrace, lap func(string)) ([]kernels.Hit, error) {
	po := graphops.PropagationOptions{MaxIter: m.o.MaxIter, Threshold: m.o.Threshold, Sentences: m.o.Sentences, Neighbours: m.nexus}
	uq, ok := unit(qv) // cosines, whatever the index's metric (the sentence vectors are unit)
	if !ok {
		uq = qv // zero: every similarity 0
	}
	prop, err := m.tg.Propagate(ctx, seeds, m.sentenceSims(uq), po)
	if err != nil {
		return nil, err
	}
	tr.Rounds, tr.Active = prop.Rounds, prop.Active
	lap("propagate")
	bonus := make([]float64, m.tg.Passages)
	m.tg.PassageBonus(prop.Active, bonus)
	reset := m.reset(dpr, bonus, prop.Weights)
	lap("bonus")
	if !slices.ContainsFunc(reset, func(x float64) bool { return x > 0 }) {
		tr.Fallback = true // nothing restarts the walk (ω_p = 0 and no positive weight)
		if !signal {
			return nil, nil
		}
		return topPassages(dpr, k), nil
	}
	m.once.Do(func() {
		adj, err := m.tg.PageRankGraph(m.o.Adjacent)
		if m.adjEr = err; err == nil {
			m.plan = graphops.NewPPRPlan(adj)
		}
	})
	if m.adjEr != nil {
		return nil, m.adjEr
	}
	pi, _, err := m.plan.Solve(ctx, reset, graphops.PPROptions{Damping: m.o.Damping, Tol: m.o.Tolerance, MaxIter: pprIterations(m.o.Damping, m.o.Tolerance)})
	if errors.Is(err, graphops.ErrNoConvergence) {
		return nil, fmt.Errorf("retrieve: %s: %w (damping %v, tolerance %v: lower the damping or raise the tolerance, --tg-damping / --tg-tol)", m.Name(), err, m.o.Damping, m.o.Tolerance)
	}
	if err != nil {
		return nil, fmt.Errorf("retrieve: %s: %w", m.Name(), err)
	}
	lap("pagerank")
	top := kernels.NewTopK(min(k, m.tg.Passages))
	for p := 0; p < m.tg.Passages; p++ {
		top.Push(int32(p), float32(pi[p]))
	}
	return top.Results(), nil
}

// sentenceSims returns a memoised cosine of each sentence with the
// question: propagation reads only the sentences of activated entities.
func (m *triGraphMethod) sentenceSims(qv []float32) func(int32) float32 {
	d := m.ix.Meta.Dims
	memo := map[int32]float32{}
	return func(s int32) float32 {
		if v, ok := memo[s]; ok {
			return v
		}
		v := dot(m.tg.SentenceVecs[int(s)*d:(int(s)+1)*d], qv)
		memo[s] = v
		return v
	}
}

// reset is the restart vector over [passages; entities]: ω_p·score_p for
// passage p (NexusRAG: exp(minmax(max(dpr, 0))) + bonus; LinearRAG:
// passage_ratio·minmax(dpr) + ln(1 + bonus)) and the cumulative entity
// weights, NaN and negatives → 0 (the reference's rule, on both parts).
func (m *triGraphMethod) reset(dpr []float32, bonus, ew []float64) []float64 {
	np := m.tg.Passages
	r := make([]float64, np+len(ew))
	for p, x := range dpr {
		r[p] = float64(x)
		if m.nexus {
			r[p] = max(r[p], 0)
		}
	}
	minMaxScaled(r[:np], 1)
	for p := 0; p < np; p++ {
		if m.nexus {
			r[p] = m.o.PassageWeight * (math.Exp(r[p]) + bonus[p])
		} else {
			r[p] = m.o.PassageWeight * (m.o.PassageRatio*r[p] + math.Log1p(bonus[p]))
		}
	}
	copy(r[np:], ew)
	for i, x := range r { // a negative seed cosine can make either part negative or NaN
		if !(x > 0) || math.IsInf(x, 0) {
			r[i] = 0
		}
	}
	return r
}

// pprIterations allows twice what damping d needs to reach tol.
func pprIterations(d, tol float64) int {
	need := 2*math.Log(tol)/math.Log(d) + 100
	return int(min(need, maxPPRIter))
}

// topPassages ranks passages by dense score (the fallback).
func topPassages(dpr []float32, k int) []kernels.Hit {
	top := kernels.NewTopK(min(k, len(dpr)))
	for p, x := range dpr {
		top.Push(int32(p), x)
	}
	return top.Results()
}

// dot is the float32 inner product, accumulated in float64.
func dot(a, b []float32) float32 {
	var s float64
	for i, x := range a {
		s += float64(x) * float64(b[i])
	}
	return float32(s)
}

// argmax returns the first index of the largest value.
func argmax(s []float32) int {
	best := 0
	for i, x := range s {
		if x > s[best] {
			best = i
		}
	}
	return best
}

// unit returns v scaled to unit length; false for a zero or non-finite v.
func unit(v []float32) ([]float32, bool) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if !(s > 0) || math.IsInf(s, 0) {
		return nil, false
	}
	out := make([]float32, len(v))
	inv := 1 / math.Sqrt(s)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out, true
}
