// Package trigraph is NexusRAG and LinearRAG (docs/methods.md §2): the
// Tri-Graph of entities, sentences and passages as an index section (built
// by `gleaner graph build --kind trigraph`), methods "nexusrag" and
// "linearrag" over it, and its report (`gleaner graph stats --kind
// trigraph`). The two methods share one section and one options type; they
// differ in NexusRAG's neighbour clamp, W hop and passage initialisation.
package trigraph

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/vecmath"
	"github.com/gleaner-rag/gleaner/models/ner"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

// Options configure "nexusrag" and "linearrag" (docs/methods.md
// §2.1, §2.4–2.5). Start from Preset or DefaultOptions; every field
// is used as given.
type Options struct {
	MaxIter   int     // maxT: propagation runs MaxIter−1 rounds (3 → 2)
	Threshold float64 // δ: pruning threshold and NexusRAG's floor
	Sentences int     // η: sentences an entity spreads through per round
	Damping   float64 // PageRank's probability of following an edge, in (0, 1)
	Tolerance float64 // PageRank stops when a sweep changes π by less than this in L1 (1e-10, igraph's)
	// CertifiedStop lets PageRank stop before Tolerance once the top k
	// passages, in order, are certain to be the exact π's (the scores are
	// then within the certificate's bound of π: graphops.PPRPlan.SolveTop).
	CertifiedStop bool
	PassageWeight float64 // ω_p: the passages' share of the restart vector
	PassageRatio  float64 // LinearRAG: weight of the dense score in a passage's restart mass
	// PassageScores is the passage similarity of the restart vector: the
	// reference's dense cosine (StageVector) or another first stage
	// (StageBM25, StageHybrid, configured by Hybrid).
	PassageScores string
	// Hybrid configures PassageScores = StageHybrid.
	Hybrid retrieve.HybridOptions
	// Adjacent joins passage i and i+1 in the PageRank graph (the
	// reference's chunk-order edges).
	Adjacent bool
	// NER finds the question's entities; nil means the extractor the
	// index's Tri-Graph was built with (recorded in its manifest).
	NER    ner.EntityExtractor
	preset string // the preset last applied (the preset setting)
}

// Presets lists the per-dataset presets of §2.1.
func Presets() []string { return []string{"2wiki", "hotpotqa", "musique", "medical"} }

// Preset returns the settings the papers report for a dataset:
// maxT, δ, η and LinearRAG's passage_ratio differ; d = 0.5 and ω_p = 0.05
// everywhere.
func Preset(name string) (Options, error) {
	o := Options{MaxIter: 3, Threshold: 0.4, Sentences: 1, Damping: 0.5, Tolerance: 1e-10, PassageWeight: 0.05, PassageRatio: 0.05, Adjacent: true,
		CertifiedStop: true, PassageScores: retrieve.StageVector, Hybrid: retrieve.DefaultHybrid()}
	switch name {
	case "2wiki", "hotpotqa":
	case "musique":
		o.MaxIter, o.Threshold, o.Sentences, o.PassageRatio = 5, 0.1, 4, 2.0
	case "medical":
		o.MaxIter, o.Threshold, o.Sentences, o.PassageRatio = 3, 0.5, 3, 1.5
	default:
		return o, fmt.Errorf("trigraph: preset %q: want one of %s", name, strings.Join(Presets(), ", "))
	}
	return o, nil
}

// maxPassageScale bounds ω_p and passage_ratio: the papers use ≤ 2, and
// values near float64's range overflow exp(·)·ω_p to +Inf.
const maxPassageScale = 1e6

// DefaultOptions are the 2Wiki/HotpotQA preset.
func DefaultOptions() Options {
	o, _ := Preset("2wiki")
	return o
}

// Params binds every setting; preset sets several of them at once, and
// any given explicitly overrides it.
func (o *Options) Params(p *retrieve.Params) {
	p.Setter("preset", "nexusrag/linearrag: the paper's settings for a dataset: "+strings.Join(Presets(), ", ")+" (default: 2wiki's)",
		func() string { return o.preset }, o.applyPreset).First()
	p.Int(&o.MaxIter, "max-iter", "nexusrag/linearrag: maxT; propagation runs maxT−1 rounds", retrieve.AtLeast(1))
	p.Float(&o.Threshold, "delta", "nexusrag/linearrag: δ, the pruning threshold (and nexusrag's floor)", retrieve.AtLeast(0.0), retrieve.Finite)
	p.Int(&o.Sentences, "eta", "nexusrag/linearrag: η, sentences an entity spreads through per round", retrieve.AtLeast(1))
	p.Float(&o.Damping, "tg-damping", "nexusrag/linearrag: PageRank's probability of following an edge, in (0,1)", retrieve.Between(0.0, 1.0))
	p.Float(&o.Tolerance, "tg-tol", "nexusrag/linearrag: PageRank's L1 tolerance (igraph's 1e-10; larger is faster)", retrieve.Between(0.0, 1.0))
	p.Bool(&o.CertifiedStop, "tg-certified-stop", "nexusrag/linearrag: stop PageRank once the top k passages are certain (false: solve to tg-tol)")
	p.Float(&o.PassageWeight, "passage-weight", "nexusrag/linearrag: ω_p, the passages' weight in the restart vector", retrieve.Within(0.0, maxPassageScale))
	p.Float(&o.PassageRatio, "passage-ratio", "linearrag: weight of the dense score in a passage's restart mass", retrieve.Within(0.0, maxPassageScale))
	p.String(&o.PassageScores, "passage-scores", "nexusrag/linearrag: passage similarity of the restart vector: vector (the papers'), bm25 or hybrid", retrieve.OneOf(retrieve.Stages()...))
	o.Hybrid.Params(p)
	p.Bool(&o.Adjacent, "adjacent-passages", "nexusrag/linearrag: join consecutive passages in the PageRank graph")
}

// applyPreset sets the preset's values (those given explicitly are set
// after it: the preset is a First setting).
func (o *Options) applyPreset(name string) error {
	preset := name
	if preset == "" { // the default: 2wiki's values
		preset = "2wiki"
	}
	p, err := Preset(preset)
	if err != nil {
		return err
	}
	o.MaxIter, o.Threshold, o.Sentences, o.Damping = p.MaxIter, p.Threshold, p.Sentences, p.Damping
	o.PassageWeight, o.PassageRatio, o.Adjacent, o.preset = p.PassageWeight, p.PassageRatio, p.Adjacent, name
	return nil
}

// Validate checks every setting.
func (o Options) Validate() error { return retrieve.Validate(&o, (*Options).Params) }

func init() {
	for _, nexus := range []bool{true, false} {
		name, summary := "nexusrag", "NexusRAG: question entities → Tri-Graph propagation (neighbour clamp, W hop) → passage PageRank"
		params := (*Options).Params
		if !nexus {
			name, summary = "linearrag", "LinearRAG: question entities → Tri-Graph propagation → passage PageRank"
		} else {
			params = func(o *Options, p *retrieve.Params) { o.Params(p); p.Drop("passage-ratio") } // LinearRAG's alone
		}
		retrieve.Must(retrieve.Register(retrieve.Def[Options]{Name: name, Summary: summary, Defaults: DefaultOptions, Params: params,
			Reads: []string{Section}, Filters: true, Tune: &retrieve.Tuning{Axes: []retrieve.TuneAxis{{Setting: "passage-weight", Values: []string{"0.05", "0.3"}}}},
			Host: "propagation and PageRank run on the host (sparse, per query); entity linking and passage scores run on the backend",
			New: func(ix *index.Index, env retrieve.Env, o Options) (retrieve.Method, error) {
				return newMethod(ix, env, o, nexus)
			}}))
	}
}

// NewNexusRAG makes method "nexusrag" with o.
func NewNexusRAG(ix *index.Index, env retrieve.Env, o Options) (*Method, error) {
	return newMethod(ix, env, o, true)
}

// NewLinearRAG makes method "linearrag" with o.
func NewLinearRAG(ix *index.Index, env retrieve.Env, o Options) (*Method, error) {
	return newMethod(ix, env, o, false)
}

func newMethod(ix *index.Index, env retrieve.Env, o Options, nexus bool) (*Method, error) {
	name := map[bool]string{true: "nexusrag", false: "linearrag"}[nexus]
	if err := o.Validate(); err != nil {
		return nil, err
	}
	tg, err := Of(ix)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if env.Backend == nil {
		return nil, retrieve.ErrNoBackend
	}
	ownNER := o.NER == nil
	if ownNER {
		ex, err := indexExtractor(ix, tg, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: question NER: %w", name, err)
		}
		o.NER = ex
	}
	seg, err := ner.NewSegmenter()
	if err != nil {
		return nil, err
	}
	st, err := retrieve.NewStage(ix, env.Backend, retrieve.StageOptions{Kind: o.PassageScores, Hybrid: o.Hybrid})
	if err != nil {
		return nil, err
	}
	m := &Method{nexus: nexus, ix: ix, tg: tg, o: o, be: env.Backend, st: st, seg: seg, ownNER: ownNER}
	m.full = &graph{tg: tg, whole: tg}
	return m, nil
}

// Method is NexusRAG (nexus: neighbour clamp, W hop, exp passage
// initialisation) or LinearRAG (plain products, passage_ratio), over the
// index's Tri-Graph (docs/methods.md §2.4–2.5): question NER → seed
// entities by cosine → propagation through sentences → passage restart
// mass → personalized PageRank over entities and passages.
type Method struct {
	nexus bool
	ix    *index.Index
	tg    *TriGraph
	o     Options
	be    engine.Backend
	st    *retrieve.Stage
	seg   *ner.Segmenter
	full  *graph // the whole Tri-Graph; a filtered query walks a view's
	// ownNER: the question NER is the index's (Options.NER nil), so a view
	// gets the one its own passages' titles make.
	ownNER bool
}

// graph is the Tri-Graph one query walks, with what is derived from it
// once: the whole index's, or a view over a filter's passages (viewOf).
type graph struct {
	tg        *TriGraph
	whole     *TriGraph // the index's Tri-Graph
	passages  []int32   // graph passage → index node; nil: the same numbers
	sentences []int32   // graph sentence → whole's; nil: the same numbers
	once      sync.Once
	plan      *graphops.PPRPlan
	adjEr     error
	exact     struct {
		once sync.Once
		ids  map[string]int32 // lowercased surface string → its first entity
	}
	gazetteer struct { // a view's question NER from its passages' titles
		once sync.Once
		ex   ner.EntityExtractor
		err  error
	}
}

// sentenceVec is sentence s's vector (d values).
func (g *graph) sentenceVec(s int32, d int) []float32 {
	if g.sentences != nil {
		s = g.sentences[s]
	}
	return g.whole.SentenceVecs[int(s)*d : (int(s)+1)*d]
}

// graphFor is the graph a query walks: the whole Tri-Graph, or the view
// over its allowed passages (made once per filter set and options).
func (m *Method) graphFor(q retrieve.Query) (*graph, error) {
	if q.Allow == nil {
		return m.full, nil
	}
	if err := retrieve.CheckAllow(m.ix, q); err != nil {
		return nil, err
	}
	g, err := viewOf(m.tg, q.Allow, allowedTitles(m.ix, q.Allow), m.o.Adjacent, m.ix.Meta.Dims, m.be)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Name(), err)
	}
	return g, nil
}

// allowedTitles tests whether a string is a title or alias of an allowed
// node (what a title gazetteer built over them would match), making the
// set on first use.
func allowedTitles(ix *index.Index, allow *filter.Set) func(string) bool {
	var once sync.Once
	var set map[string]bool
	return func(s string) bool {
		once.Do(func() {
			set = map[string]bool{}
			for i := range ix.N() {
				if allow.Has(i) {
					set[ix.Title(i)] = true
					for _, a := range ix.Aliases(i) {
						set[a] = true
					}
				}
			}
		})
		return set[s]
	}
}

// questionNER is the extractor of the question's entities: the caller's
// (Options.NER), the index's, or for a view the index's rebuilt over the
// allowed passages' titles alone (a hidden title must not become a
// question entity).
func (m *Method) questionNER(g *graph) (ner.EntityExtractor, error) {
	if !m.ownNER || g.passages == nil {
		return m.o.NER, nil
	}
	g.gazetteer.once.Do(func() { g.gazetteer.ex, g.gazetteer.err = indexExtractor(m.ix, g.whole, g.passages) })
	if g.gazetteer.err != nil {
		return nil, fmt.Errorf("%s: question NER: %w", m.Name(), g.gazetteer.err)
	}
	return g.gazetteer.ex, nil
}

// indexExtractor rebuilds the extractor the Tri-Graph was built with, its
// gazetteer made of the titles of the given nodes (nil: every node).
func indexExtractor(ix *index.Index, tg *TriGraph, nodes []int32) (ner.EntityExtractor, error) {
	var titles []string
	if name := tg.Meta.NER; name == "titles" || name == "both" {
		add := func(i int) { titles = append(append(titles, ix.Title(i)), ix.Aliases(i)...) }
		if nodes == nil {
			for i := range ix.N() {
				add(i)
			}
		}
		for _, i := range nodes {
			add(int(i))
		}
	}
	return ner.New(tg.Meta.NER, titles)
}

func (m *Method) Name() string {
	if m.nexus {
		return "nexusrag"
	}
	return "linearrag"
}

// Retrieve implements Method.
func (m *Method) Retrieve(ctx context.Context, q retrieve.Query, k int) ([]retrieve.Hit, error) {
	hits, _, err := m.Trace(ctx, q, k)
	return hits, err
}

// Trace tells what one nexusrag/linearrag query did: the question's
// entities, the seeds they linked to, the propagation, and how long each
// stage took.
type Trace struct {
	QuestionEntities []string
	Seeds            []TraceSeed
	Rounds           int
	Active           []graphops.Activation // every activated entity's last write
	Fallback         bool                  // no seed: the dense ranking was returned
	Sweeps           int                   // PageRank's Gauss–Seidel sweeps
	Certified        bool                  // PageRank stopped once the top k were certain
	Stages           map[string]time.Duration
}

// TraceSeed is a question entity linked to its nearest Tri-Graph entity.
type TraceSeed struct {
	Mention string
	Entity  string
	Score   float64
}

// Trace retrieves like Retrieve and reports what happened.
func (m *Method) Trace(ctx context.Context, q retrieve.Query, k int) ([]retrieve.Hit, *Trace, error) {
	q = retrieve.Visible(m.ix, q) // deleted nodes stay out

	tr := &Trace{Stages: map[string]time.Duration{}}
	clock := time.Now()
	lap := func(stage string) { now := time.Now(); tr.Stages[stage] += now.Sub(clock); clock = now }
	if strings.TrimSpace(q.Text) == "" {
		return nil, tr, fmt.Errorf("%s needs question text (its entities seed the walk): %w", m.Name(), retrieve.ErrEmptyQuery)
	}
	g, err := m.graphFor(q)
	if err != nil {
		return nil, tr, err
	}
	qv, err := m.queryVector(ctx, q)
	if err != nil {
		return nil, tr, err
	}
	dpr, signal, err := m.passageScores(ctx, q, qv, g)
	if err != nil {
		return nil, tr, err
	}
	lap("embed")
	if tr.QuestionEntities, err = m.questionEntities(ctx, g, q.Text); err != nil {
		return nil, tr, err
	}
	lap("ner")
	seeds, err := m.link(ctx, g, tr)
	if err != nil {
		return nil, tr, err
	}
	lap("seeds")
	if len(seeds) == 0 {
		tr.Fallback = true
		if !signal {
			return nil, tr, nil // nothing to rank by, as bm25 and vector answer such a question
		}
		return g.indexHits(topPassages(dpr, k)), tr, nil
	}
	hits, err := m.walk(ctx, g, qv, dpr, signal, seeds, k, tr, lap)
	return g.indexHits(hits), tr, err
}

// indexHits renames a view's passages to index nodes.
func (g *graph) indexHits(hits []retrieve.Hit) []retrieve.Hit {
	if g.passages != nil {
		for i := range hits {
			hits[i].Index = g.passages[hits[i].Index]
		}
	}
	return hits
}

// passageScores is every passage's similarity to the question (g's
// passages): the dense cosine, or the configured first stage (over the
// allowed passages' statistics). signal is false when the question
// matches nothing (a zero query vector, no BM25 term); the scores are then
// zeros.
func (m *Method) passageScores(ctx context.Context, q retrieve.Query, qv []float32, g *graph) ([]float32, bool, error) {
	np := g.tg.Passages
	if m.o.PassageScores == retrieve.StageVector {
		if _, ok := vecmath.Unit(qv); !ok {
			return make([]float32, np), false, nil
		}
		sc, err := retrieve.DenseScores(ctx, m.be, m.ix, qv)
		return g.gather(sc), true, err
	}
	sc, err := m.st.Scores(ctx, q) // nil when nothing matches among the allowed passages
	if err != nil || sc == nil {
		return make([]float32, np), false, err
	}
	return g.gather(sc), true, nil
}

// gather is the index-wide scores of g's passages.
func (g *graph) gather(sc []float32) []float32 {
	if g.passages == nil || sc == nil {
		return sc
	}
	out := make([]float32, len(g.passages))
	for i, p := range g.passages {
		out[i] = sc[p]
	}
	return out
}

// queryVector embeds the question; a question the embedder cannot
// represent gets a zero vector (every similarity 0), not an error, since
// its entities may still link.
func (m *Method) queryVector(ctx context.Context, q retrieve.Query) ([]float32, error) {
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
func (m *Method) questionEntities(ctx context.Context, g *graph, text string) ([]string, error) {
	ex, err := m.questionNER(g)
	if err != nil {
		return nil, err
	}
	sents, err := ner.Extract(ctx, m.seg, ex, text)
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
func (m *Method) link(ctx context.Context, g *graph, tr *Trace) ([]graphops.Seed, error) {
	if len(tr.QuestionEntities) == 0 || len(g.tg.Entities) == 0 {
		return nil, nil
	}
	var seeds []graphops.Seed
	var rest []string
	for _, mention := range tr.QuestionEntities {
		if e, ok := g.exactEntity(mention); ok {
			seeds = append(seeds, graphops.Seed{Entity: e, Score: 1})
			tr.Seeds = append(tr.Seeds, TraceSeed{Mention: mention, Entity: g.tg.Entities[e], Score: 1})
		} else {
			rest = append(rest, mention)
		}
	}
	if len(rest) == 0 {
		return seeds, nil
	}
	more, err := m.linkByCosine(ctx, g, rest, tr)
	return append(seeds, more...), err
}

// exactEntity looks a lowercased mention up among the entities.
func (g *graph) exactEntity(mention string) (int32, bool) {
	g.exact.once.Do(func() {
		g.exact.ids = make(map[string]int32, len(g.tg.Entities))
		for e, s := range g.tg.Entities {
			if _, dup := g.exact.ids[strings.ToLower(s)]; !dup {
				g.exact.ids[strings.ToLower(s)] = int32(e)
			}
		}
	})
	e, ok := g.exact.ids[mention]
	return e, ok
}

// linkByCosine links mentions to the entity of highest cosine (ties: the
// lower entity number), on the backend.
func (m *Method) linkByCosine(ctx context.Context, g *graph, mentions []string, tr *Trace) ([]graphops.Seed, error) {
	d := m.ix.Meta.Dims
	vs, err := m.ix.Embedder.Embed(ctx, mentions)
	if err != nil {
		return nil, fmt.Errorf("trigraph: embedding question entities: %w", err)
	}
	if len(vs) != len(mentions)*d {
		return nil, fmt.Errorf("trigraph: embedder %s returned %d values for %d entities of %d dims", m.ix.Embedder.Name(), len(vs), len(mentions), d)
	}
	var kept []string
	var q []float32
	for i, mention := range mentions {
		if v, ok := vecmath.Unit(vs[i*d : (i+1)*d]); ok { // a zero or non-finite vector links to nothing
			kept, q = append(kept, mention), append(q, v...)
		}
	}
	best, scores, err := m.nearestEntities(ctx, g, q, len(kept))
	if err != nil {
		return nil, err
	}
	var seeds []graphops.Seed
	for i, mention := range kept {
		if e := best[i]; e >= 0 {
			seeds = append(seeds, graphops.Seed{Entity: e, Score: float64(scores[i])})
			tr.Seeds = append(tr.Seeds, TraceSeed{Mention: mention, Entity: g.tg.Entities[e], Score: float64(scores[i])})
		}
	}
	return seeds, nil
}

// nearestEntities is each of the nq query rows' entity of highest inner
// product: on the backend for the whole Tri-Graph, on the host for a view
// (a few mentions against its entities; ties: the lower entity).
func (m *Method) nearestEntities(ctx context.Context, g *graph, q []float32, nq int) ([]int32, []float32, error) {
	d, ne := m.ix.Meta.Dims, len(g.tg.Entities)
	if g.passages == nil {
		return retrieve.Nearest(ctx, m.be, m.ix, "trigraph.entity_vectors", g.tg.EntityVecs, ne, d, q, nq)
	}
	best, scores := make([]int32, nq), make([]float32, nq)
	for i := range nq {
		best[i] = -1
		if h := retrieve.TopRowsWhere(g.tg.EntityVecs, d, func(int32) bool { return true }, q[i*d:(i+1)*d], 1); len(h) > 0 {
			best[i], scores[i] = h[0].Index, h[0].Score
		}
	}
	return best, scores, nil
}

// walk propagates from the seeds, sets the restart vector and ranks the
// passages by personalized PageRank.
func (m *Method) walk(ctx context.Context, g *graph, qv, dpr []float32, signal bool, seeds []graphops.Seed, k int, tr *Trace, lap func(string)) ([]retrieve.Hit, error) {
	po := graphops.PropagationOptions{MaxIter: m.o.MaxIter, Threshold: m.o.Threshold, Sentences: m.o.Sentences, Neighbours: m.nexus}
	uq, ok := vecmath.Unit(qv) // cosines, whatever the index's metric (the sentence vectors are unit)
	if !ok {
		uq = qv // zero: every similarity 0
	}
	prop, err := g.tg.Propagate(ctx, seeds, m.sentenceSims(g, uq), po)
	if err != nil {
		return nil, err
	}
	tr.Rounds, tr.Active = prop.Rounds, prop.Active
	lap("propagate")
	bonus := make([]float64, g.tg.Passages)
	g.tg.PassageBonus(prop.Active, bonus)
	reset := m.reset(g, dpr, bonus, prop.Weights)
	lap("bonus")
	if !slices.ContainsFunc(reset, func(x float64) bool { return x > 0 }) {
		tr.Fallback = true // nothing restarts the walk (ω_p = 0 and no positive weight)
		if !signal {
			return nil, nil
		}
		return topPassages(dpr, k), nil
	}
	g.once.Do(func() {
		adj, err := g.tg.PageRankGraph(m.o.Adjacent)
		if g.adjEr = err; err == nil {
			g.plan = graphops.NewPPRPlan(adj)
		}
	})
	if g.adjEr != nil {
		return nil, g.adjEr
	}
	pi, err := m.solve(ctx, g, reset, k, tr)
	if errors.Is(err, graphops.ErrNoConvergence) {
		return nil, fmt.Errorf("%s: %w (damping %v, tolerance %v: lower the damping or raise the tolerance, --tg-damping / --tg-tol)", m.Name(), err, m.o.Damping, m.o.Tolerance)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Name(), err)
	}
	lap("pagerank")
	top := engine.NewTopK(min(k, g.tg.Passages))
	for p := 0; p < g.tg.Passages; p++ {
		top.Push(int32(p), float32(pi[p]))
	}
	return top.Results(), nil
}

// solve runs the walk's PageRank, stopped early when the top k are
// certain if the options allow it.
func (m *Method) solve(ctx context.Context, g *graph, reset []float64, k int, tr *Trace) ([]float64, error) {
	o := graphops.PPROptions{Damping: m.o.Damping, Tol: m.o.Tolerance, MaxIter: graphops.PPRIterations(m.o.Damping, m.o.Tolerance)}
	if !m.o.CertifiedStop {
		pi, it, err := g.plan.Solve(ctx, reset, o)
		tr.Sweeps = it
		return pi, err
	}
	pi, st, err := g.plan.SolveTop(ctx, reset, o, g.tg.Passages, k)
	tr.Sweeps, tr.Certified = st.Sweeps, st.Certified
	return pi, err
}

// sentenceSims returns a memoised cosine of each sentence with the
// question: propagation reads only the sentences of activated entities.
func (m *Method) sentenceSims(g *graph, qv []float32) func(int32) float32 {
	d := m.ix.Meta.Dims
	memo := map[int32]float32{}
	return func(s int32) float32 {
		if v, ok := memo[s]; ok {
			return v
		}
		v := vecmath.Dot(g.sentenceVec(s, d), qv)
		memo[s] = v
		return v
	}
}

// reset is the restart vector over [passages; entities]: ω_p·score_p for
// passage p (NexusRAG: exp(minmax(max(dpr, 0))) + bonus; LinearRAG:
// passage_ratio·minmax(dpr) + ln(1 + bonus)) and the cumulative entity
// weights, NaN and negatives → 0 (the reference's rule, on both parts).
func (m *Method) reset(g *graph, dpr []float32, bonus, ew []float64) []float64 {
	np := g.tg.Passages
	r := make([]float64, np+len(ew))
	for p, x := range dpr {
		r[p] = float64(x)
		if m.nexus {
			r[p] = max(r[p], 0)
		}
	}
	vecmath.MinMaxScaled(r[:np], 1)
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

// topPassages ranks passages by dense score (the fallback).
func topPassages(dpr []float32, k int) []retrieve.Hit {
	top := engine.NewTopK(min(k, len(dpr)))
	for p, x := range dpr {
		top.Push(int32(p), x)
	}
	return top.Results()
}
