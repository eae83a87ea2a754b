// Package seeder is SeedER on knowledge graphs (docs/methods.md §3):
// stages 1–2 as methods of their own ("kg-seeds": dictionary and cosine
// seeds; "kg-khop": K-hop-with-filtering ranked by cosine), the trained
// Exphormer encoder as an index section (`gleaner train seeder`), and
// method "seeder" over it.
package seeder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/vecmath"
	encoder "github.com/gleaner-rag/gleaner/models/seeder"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// KGOptions configure SeedER's first stages and their baselines: K0
// dictionary seeds, then K-hop-with-filtering.
type KGOptions struct {
	GraphKinds []string // graph-kind: the edge kinds the expansion follows (empty: all)
	K0         int      // k0: seeds kept from dictionary linking (the rest filled by cosine), ≥ 1
	KHop       graphops.KHopFilterOptions
	// KeepLinked (keep-linked) makes kg-khop rank the dictionary-linked
	// seeds too; by default they are left out, being the question's own
	// entities.
	KeepLinked bool
	// Paths (paths) makes the filter read the question with the learned
	// text side stored with the index's SeedER encoder (trained with
	// --paths): its per-hop relation probabilities replace sim(q, r).
	Paths bool
}

// MaxHops bounds the hop quotas.
const MaxHops = 64

// DefaultKGOptions: k0 = 5 (PRIME, MAG) and the MiniLM PRIME reference
// quotas (200, 200, 100), cap 500.
func DefaultKGOptions() KGOptions {
	return KGOptions{K0: 5, KHop: graphops.DefaultKHopFilterOptions()}
}

// Params binds every setting.
func (o *KGOptions) Params(p *retrieve.Params) {
	retrieve.GraphKinds(p, &o.GraphKinds)
	o.stages(p)
	p.Bool(&o.KeepLinked, "keep-linked", "kg-khop: rank the dictionary-linked seeds too (default: left out, being the question's own entities)")
	p.Bool(&o.Paths, "paths", "kg-khop: the filter's relation term from the text side trained with the index's SeedER encoder (an extension, docs/methods.md §3.5)")
}

// stages binds stage 1–2's settings (what training records).
func (o *KGOptions) stages(p *retrieve.Params) {
	p.Int(&o.K0, "k0", "dictionary-linked seeds kept (the rest filled by cosine)", retrieve.AtLeast(1))
	p.Ints(&o.KHop.Quotas, "khop-quotas", "nodes added at each hop, comma-separated", retrieve.NonEmpty[int], retrieve.EachAtLeast(0, MaxHops))
	p.Int(&o.KHop.Cap, "khop-cap", "the candidate graph's size, seeds included", retrieve.AtLeast(1))
	p.Check(o.KHop.Validate)
}

// Validate checks every setting.
func (o KGOptions) Validate() error { return retrieve.Validate(&o, (*KGOptions).Params) }

func init() {
	for _, khop := range []bool{false, true} {
		name, summary := "kg-seeds", "SeedER's stage 1 on its own: dictionary-linked seeds, then the nodes nearest the question"
		params := func(o *KGOptions, p *retrieve.Params) {
			o.Params(p)
			p.Drop("keep-linked", "khop-quotas", "khop-cap", "graph-kind", "paths")
		}
		if khop {
			name, summary = "kg-khop", "SeedER's stages 1–2: the K-hop-with-filtering candidate graph ranked by cosine"
			params = (*KGOptions).Params
		}
		retrieve.Must(retrieve.Register(retrieve.Def[KGOptions]{Name: name, Summary: summary, Defaults: DefaultKGOptions, Params: params, Filters: true,
			Host: "linking and the k-hop expansion run on the host; the question's cosines run on the backend",
			New: func(ix *index.Index, env retrieve.Env, o KGOptions) (retrieve.Method, error) {
				return newKG(ix, env, o, khop)
			}}))
	}
	retrieve.Must(retrieve.Register(retrieve.Def[KGOptions]{Name: "kg-paths",
		Summary:  "SeedER's stages 1–2 with the learned text side, candidates ranked by its answer mass alone (no encoder)",
		Defaults: func() KGOptions { o := DefaultKGOptions(); o.Paths, o.KeepLinked = true, true; return o },
		Params: func(o *KGOptions, p *retrieve.Params) {
			o.Params(p)
			p.Drop("paths")
		},
		Reads: []string{Section}, Filters: true,
		Host: "linking, the k-hop expansion and the answer mass run on the host; the question's cosines run on the backend",
		New: func(ix *index.Index, env retrieve.Env, o KGOptions) (retrieve.Method, error) {
			o.Paths = true // kg-paths is the text side: never without it
			m, err := newKG(ix, env, o, true)
			if err == nil {
				m.rankPaths = true
			}
			return m, err
		}}))
}

// kgMethod is a SeedER baseline over a knowledge-graph index: kg-seeds
// ranks stage 1's seeds (dictionary matches, then the nodes nearest the
// query), kg-khop ranks stage 2's candidate graph by cosine with the query.
type kgMethod struct {
	ix      *index.Index
	o       KGOptions
	khop    bool
	be      engine.Backend
	once    sync.Once
	linker  *entityLinker
	relUnit [][]float32 // relation id → its name's unit vector (nil: none)
	relErr  error
	kgOnce  sync.Once
	kg      *encoder.PathGraph // the whole KG as the text side spreads over it
	paths   *pathModel         // the learned text side (nil: the paper's filter)
	// rankPaths (kg-paths) ranks the candidates by the text side's answer
	// mass over the candidate graph, ties by cosine.
	rankPaths bool
}

// newKG makes kg-seeds, or kg-khop with khop.
func newKG(ix *index.Index, env retrieve.Env, o KGOptions, khop bool) (*kgMethod, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if env.Backend == nil {
		return nil, retrieve.ErrNoBackend
	}
	if khop {
		if err := retrieve.RequireGraph(ix, o.GraphKinds, "kg-khop"); err != nil {
			return nil, err
		}
	}
	m := &kgMethod{ix: ix, o: o, khop: khop, be: env.Backend}
	if khop && o.Paths {
		f, err := Of(ix)
		if err != nil {
			return nil, err
		}
		if f.paths == nil {
			return nil, fmt.Errorf("the index's SeedER encoder was trained without the learned text side that kg-paths and kg-khop --paths read: train it with `gleaner train seeder --paths`")
		}
		m.paths = f.paths
	}
	return m, nil
}

// keepEdge says whether the expansion follows an edge of relation r: all
// edges, or those of Options.GraphKinds (e.g. only "kg" in an index that
// also holds a knn graph).
func (m *kgMethod) keepEdge(r int32) bool {
	if len(m.o.GraphKinds) == 0 {
		return true
	}
	if r < 0 {
		return false
	}
	kind, _ := m.ix.RelationName(r)
	return slices.Contains(m.o.GraphKinds, kind)
}

func (m *kgMethod) Name() string {
	if m.rankPaths {
		return "kg-paths"
	}
	if m.khop {
		return "kg-khop"
	}
	return "kg-seeds"
}

// prepare builds the dictionary and embeds the relation names once.
func (m *kgMethod) prepare(ctx context.Context) error {
	m.once.Do(func() {
		m.linker = newEntityLinker(m.ix)
		var names []string
		for r := 0; r < m.ix.Meta.Relations; r++ {
			_, rel := m.ix.RelationName(int32(r))
			names = append(names, strings.Join(strings.FieldsFunc(rel, func(c rune) bool { return c == '_' || c == '.' }), " "))
		}
		if len(names) > 0 && m.ix.Embedder != nil {
			// once for all queries: the first query's cancellation must not stick
			var vecs []float32
			vecs, m.relErr = m.ix.Embedder.Embed(context.WithoutCancel(ctx), names)
			m.relUnit = vecmath.UnitRows(vecs, len(names), m.ix.Meta.Dims)
		}
	})
	return m.relErr
}

// Retrieve implements Method.
func (m *kgMethod) Retrieve(ctx context.Context, q retrieve.Query, k int) ([]retrieve.Hit, error) {
	q = retrieve.Visible(m.ix, q) // deleted nodes stay out

	if err := retrieve.CheckAllow(m.ix, q); err != nil {
		return nil, err
	}
	if !m.khop {
		_, sims, err := m.querySims(ctx, q)
		if err != nil {
			return nil, err
		}
		seeds, _ := m.linkerFor(q).seeds(q.Text, sims, m.o.K0, k, q.Allow.Keep())
		return ranked(seeds, sims), nil
	}
	c, err := m.candidates(ctx, q)
	if err != nil {
		return nil, err
	}
	nodes := c.nodes
	if !m.o.KeepLinked {
		nodes = slices.DeleteFunc(slices.Clone(nodes), func(v int32) bool { return c.linked[v] })
	}
	score := c.sims
	if m.rankPaths {
		score = m.candidateMass(c)
	}
	slices.SortStableFunc(nodes, func(a, b int32) int {
		return cmp.Or(cmp.Compare(score[b], score[a]), cmp.Compare(c.sims[b], c.sims[a]), cmp.Compare(a, b))
	})
	return ranked(nodes[:min(k, len(nodes))], score), nil
}

// candidateMass is every node's text-side answer mass spreading over the
// candidate graph alone from the linked seeds (0 off it).
func (m *kgMethod) candidateMass(c *kgCandidates) []float32 {
	linked := make([]bool, len(c.nodes))
	for i, v := range c.nodes {
		linked[i] = c.linked[v]
	}
	sp := c.paths.Spread(m.candidatePathGraph(c), linkedRows(linked, c.hops), nil)
	out := make([]float32, m.ix.N())
	for i, v := range c.nodes {
		out[v] = float32(sp.Y[i])
	}
	return out
}

// linkerFor is the dictionary a query may link to: every node's names, or
// under a filter those of its nodes alone (made once per filter set).
func (m *kgMethod) linkerFor(q retrieve.Query) *entityLinker {
	if q.Allow == nil {
		return m.linker
	}
	return q.Allow.Memo(fmt.Sprintf("seeder linker %p", m.ix), func() any {
		return newLinkerWithin(m.ix, q.Allow.Keep())
	}).(*entityLinker)
}

// querySims prepares the method once, embeds the question and returns its
// vector and every node's cosine with it.
func (m *kgMethod) querySims(ctx context.Context, q retrieve.Query) (qv, sims []float32, err error) {
	if err := m.prepare(ctx); err != nil {
		return nil, nil, err
	}
	if qv, err = m.queryVector(ctx, q); err != nil {
		return nil, nil, err
	}
	sims, err = m.similarities(ctx, qv)
	return qv, sims, err
}

// queryVector embeds the question (zeros for text with no known term).
func (m *kgMethod) queryVector(ctx context.Context, q retrieve.Query) ([]float32, error) {
	qv, err := retrieve.EmbedQuery(ctx, m.ix, q)
	if errors.Is(err, index.ErrEmptyEmbedding) {
		return make([]float32, m.ix.Meta.Dims), nil
	}
	return qv, err
}

// similarities is every node's cosine with the query: one matrix–vector
// product on the backend (a scalar loop took 7 ms of a MetaQA query's
// 43 k × 256 values).
func (m *kgMethod) similarities(ctx context.Context, qv []float32) ([]float32, error) {
	return retrieve.DenseScores(ctx, m.be, m.ix, qv)
}

// kgCandidates is stages 1–2's output for one question: the candidate
// graph's nodes (seeds first) with their hops, the dictionary-linked
// seeds, and every node's cosine with the query.
type kgCandidates struct {
	qv      []float32
	sims    []float32 // every node's cosine (training drops it: N values per question)
	nodes   []int32
	nodeCos []float32 // the candidates' cosines
	hops    []int
	linked  map[int32]bool
	relSims []float64      // relation id → cos(q, relation name), 0 without one
	paths   *encoder.Paths // the text side's reading (nil: none)
}

// candidates runs stage 1 (seeds) and stage 2 (K-hop-with-filtering).
func (m *kgMethod) candidates(ctx context.Context, q retrieve.Query) (*kgCandidates, error) {
	qv, sims, err := m.querySims(ctx, q)
	if err != nil {
		return nil, err
	}
	c := &kgCandidates{qv: qv, sims: sims, linked: map[int32]bool{}, relSims: make([]float64, len(m.relUnit))}
	seeds, linked := m.linkerFor(q).seeds(q.Text, c.sims, m.o.K0, m.o.K0, q.Allow.Keep())
	for _, v := range seeds[:linked] {
		c.linked[v] = true
	}
	for r, v := range m.relUnit { // once per query, not once per edge visited
		if v != nil {
			c.relSims[r] = float64(vecmath.Dot(qv, v))
		}
	}
	var relHop func(r int32, inverse bool, hop int) float64
	var mass func(u int32, hop int) float64
	if m.paths != nil {
		if c.paths, err = m.paths.read(m.linkerFor(q), q.Text); err != nil {
			return nil, err
		}
		relHop = c.paths.Rel
		mass = m.pathMass(c, seeds, linked, q.Allow.Keep())
	}
	c.nodes, c.hops, err = graphops.KHopFilter(ctx, m.ix.Graph(), seeds, m.o.KHop, graphops.KHopScores{
		Edge:   m.keepEdge,
		Node:   func(u int32) float64 { return float64(c.sims[u]) },
		Rel:    c.relSim,
		RelHop: relHop,
		Mass:   mass,
		Keep:   q.Allow.Keep(),
		Source: func(v int32, hop int) float64 {
			if hop == 1 && c.linked[v] {
				return 1 // a seed the question names passes full weight (methods.md §3.1)
			}
			return float64(c.sims[v])
		},
	})
	if err != nil {
		return nil, err
	}
	c.nodeCos = make([]float32, len(c.nodes))
	for i, v := range c.nodes {
		c.nodeCos[i] = c.sims[v]
	}
	return c, nil
}

// relSim is cos(q, relation r): 0 for an edge without a relation or a
// relation without an embedding.
func (c *kgCandidates) relSim(r int32) float64 {
	if r < 0 || int(r) >= len(c.relSims) {
		return 0
	}
	return c.relSims[r]
}

// ranked turns an ordered node list into hits scored by cosine.
func ranked(nodes []int32, sims []float32) []retrieve.Hit {
	out := make([]retrieve.Hit, len(nodes))
	for i, v := range nodes {
		out[i] = retrieve.Hit{Index: v, Score: sims[v]}
	}
	return out
}

// pathMass is the answer mass the question's reading spreads over the
// whole KG from its linked seeds (the hop-0 seeds when none is linked),
// by hop: what the learned filter ranks each hop's candidates by.
func (m *kgMethod) pathMass(c *kgCandidates, seeds []int32, linked int, keep func(int32) bool) func(u int32, hop int) float64 {
	m.kgOnce.Do(func() { m.kg = pathGraph(m.ix, m.keepEdge) })
	from := seeds[:linked]
	if linked == 0 {
		from = seeds
	}
	if len(from) == 0 {
		return nil // no mass anywhere: the paper's score alone
	}
	sp := c.paths.Spread(m.kg, from, keep)
	return func(u int32, hop int) float64 {
		if hop >= len(sp.X) {
			return 0
		}
		return sp.X[hop][u]
	}
}
