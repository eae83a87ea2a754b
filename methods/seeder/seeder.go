package seeder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models/lexical"
	encoder "github.com/gleaner-rag/gleaner/models/seeder"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// Options configure method "seeder"; stages 1–2 run with the settings the
// encoder was trained with (stored beside it).
type Options struct {
	Select int // seeder-select: nodes returned: the Select best by policy, sorted by score (20)
}

// DefaultOptions: 20 nodes.
func DefaultOptions() Options { return Options{Select: 20} }

// Params binds every setting.
func (o *Options) Params(p *retrieve.Params) {
	p.Int(&o.Select, "seeder-select", "seeder: nodes returned (the best by policy, sorted by the scoring head)", retrieve.AtLeast(1))
}

// Validate checks every setting.
func (o Options) Validate() error { return retrieve.Validate(&o, (*Options).Params) }

func init() {
	retrieve.Must(retrieve.Register(retrieve.Def[Options]{Name: "seeder", Summary: "SeedER: seeds, K-hop-with-filtering, then the trained Exphormer encoder selects",
		Defaults: DefaultOptions, Params: (*Options).Params, Reads: []string{Section}, Filters: true,
		New: func(ix *index.Index, env retrieve.Env, o Options) (retrieve.Method, error) { return New(ix, env, o) }}))
}

// seederMethod is SeedER (docs/methods.md §3.1): stages 1–2 as kg-khop
// with the settings the encoder was trained with, then the encoder over
// the candidate graph; the Select best eligible nodes by policy, sorted by
// the scoring head. The encoder runs as engine ops on Options.Backend;
// queries running at once share its batches through an engine.Scheduler.
type seederMethod struct {
	kg     *kgMethod
	f      *File
	o      Options
	be     engine.Backend
	inputs *seederInputs
	once   sync.Once
	enc    *encoder.Encoder
	sched  *engine.Scheduler[*encoder.Graph, encoder.Output]
	err    error
}

// New makes method "seeder" over the index's trained encoder.
func New(ix *index.Index, env retrieve.Env, o Options) (retrieve.Method, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	f, err := Of(ix)
	if err != nil {
		return nil, err
	}
	if env.Backend == nil {
		return nil, retrieve.ErrNoBackend
	}
	// stages 1–2 as the encoder was trained: its candidate graphs are what
	// it knows (KGOptions set them for kg-khop only)
	ko := DefaultKGOptions()
	ko.K0, ko.KHop.Quotas, ko.KHop.Cap, ko.GraphKinds = f.K0, f.Quotas, f.Cap, f.Kinds
	km, err := newKG(ix, env, ko, true)
	if err != nil {
		return nil, fmt.Errorf("seeder: the stored stage-1/2 settings: %w", err)
	}
	km.paths = f.paths
	return &seederMethod{kg: km, f: f, o: o, be: env.Backend}, nil
}

func (s *seederMethod) Name() string { return "seeder" }

// AttentionShares is where the index's trained encoder attends, layer by
// layer, on the gold answers of qs (questions whose candidates hold no
// gold answer are left out): the diagnosis of docs/methods.md §3.5.
func AttentionShares(ctx context.Context, ix *index.Index, env retrieve.Env, qs []corpus.Query) ([]encoder.AttentionShare, error) {
	m, err := New(ix, env, DefaultOptions())
	if err != nil {
		return nil, err
	}
	s := m.(*seederMethod)
	if err := s.kg.prepare(ctx); err != nil {
		return nil, err
	}
	in, err := newSeederInputs(s.kg, s.f.Model.PCA, s.f.Config, s.f.Vocab)
	if err != nil {
		return nil, err
	}
	qcs, err := collectCandidates(ctx, s.kg, qs, "diagnosis", slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	return s.f.Model.AttentionShares(ctx, examples(s.kg, in, qcs, true))
}

// start projects the node and relation vectors once, binds the encoder's
// weights on the backend and starts the scheduler.
func (s *seederMethod) start(ctx context.Context) error {
	s.once.Do(func() {
		if s.err = s.kg.prepare(ctx); s.err != nil {
			return
		}
		if s.inputs, s.err = newSeederInputs(s.kg, s.f.Model.PCA, s.f.Config, s.f.Vocab); s.err != nil {
			return
		}
		if s.enc, s.err = s.f.Model.Bind(s.be); s.err != nil {
			return
		}
		if s.sched, s.err = engine.NewScheduler(s.enc.Forward, engine.SchedulerOptions{MaxBatch: 16, Workers: engine.QueueWorkers(s.be)}); s.err != nil {
			s.enc.Close()
			s.enc = nil
		}
	})
	return s.err
}

// Retrieve implements Method.
// Under a filter the candidates (stages 1–2, kgMethod.candidates) are
// allowed nodes only, and the encoder reads nothing but the candidate
// graph, so no other node reaches it.
func (s *seederMethod) Retrieve(ctx context.Context, q retrieve.Query, k int) ([]retrieve.Hit, error) {
	q = retrieve.Visible(s.kg.ix, q) // deleted nodes stay out

	if err := retrieve.CheckAllow(s.kg.ix, q); err != nil {
		return nil, err
	}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	c, err := s.kg.candidates(ctx, q)
	if err != nil {
		return nil, err
	}
	g := s.inputs.graph(s.kg, c, q.Text)
	outs, err := s.sched.Do(ctx, []*encoder.Graph{g})
	if err != nil {
		return nil, err
	}
	rows := encoder.Select(outs[0], g.Eligible, s.o.Select) // the best by policy, sorted by score,
	rows = rows[:min(k, len(rows))]                         // then cut: k < Select keeps the scoring head's order
	hits := make([]retrieve.Hit, len(rows))
	for i, r := range rows {
		hits[i] = retrieve.Hit{Index: g.IDs[r], Score: outs[0].Score[r]}
	}
	return hits, nil
}

// errSeederClosed is returned by a seeder method used after Close.
var errSeederClosed = errors.New("seeder: method closed")

// Close stops the scheduler (it returns once its batches have ended), then
// frees the encoder's weights. A Close that overlaps the first Retrieve
// waits for its start; a Retrieve after Close returns an error.
func (s *seederMethod) Close(ctx context.Context) error {
	s.once.Do(func() { s.err = errSeederClosed })
	var err error
	if s.sched != nil {
		err = s.sched.Close(ctx)
		s.sched = nil
	}
	if s.enc != nil {
		s.enc.Close()
		s.enc = nil
	}
	return err
}

// seederInputs are the PCA-reduced node and relation embeddings, computed
// once per index.
type seederInputs struct {
	pca    *encoder.PCA
	nodes  []float32   // N × In
	rels   [][]float32 // relation id → In values (zeros: no embedding)
	words  map[string]int32
	relIDs bool
}

func newSeederInputs(km *kgMethod, pca *encoder.PCA, c encoder.Config, vocab []string) (*seederInputs, error) {
	ix := km.ix
	if len(pca.Mean) != ix.Meta.Dims {
		return nil, fmt.Errorf("seeder: the encoder's PCA reads %d-dimensional vectors, the index has %d", len(pca.Mean), ix.Meta.Dims)
	}
	if c.Relations > 0 && c.Relations != ix.Meta.Relations {
		return nil, fmt.Errorf("seeder: the encoder knows %d relations, the index has %d", c.Relations, ix.Meta.Relations)
	}
	in := &seederInputs{pca: pca, nodes: pca.ProjectRows(ix.Vectors, ix.N()), words: map[string]int32{}, relIDs: c.Relations > 0}
	for i, w := range vocab {
		in.words[w] = int32(i)
	}
	in.rels = make([][]float32, ix.Meta.Relations)
	for r := range in.rels {
		if r < len(km.relUnit) && km.relUnit[r] != nil {
			in.rels[r] = pca.Project(km.relUnit[r])
		} else {
			in.rels[r] = make([]float32, pca.K)
		}
	}
	return in, nil
}

// graph turns stage 2's candidates into the encoder's input: the induced
// KG edges among them (over the followed kinds) in both directions, one
// forward and one inverse relation row per relation present. Every
// candidate is eligible (the answer-type mask is all entities here), the
// dictionary-linked seeds too: "the child of X's parent" can be X.
func (in *seederInputs) graph(km *kgMethod, c *kgCandidates, text string) *encoder.Graph {
	g := &encoder.Graph{IDs: c.nodes, Table: in.nodes, Hops: c.hops, NodeCos: c.nodeCos, Query: in.pca.Project(c.qv)}
	seen := map[int32]bool{}
	for _, t := range lexical.Analyze(text) {
		if w, ok := in.words[t]; ok && !seen[w] {
			seen[w] = true
			g.Words = append(g.Words, w)
		}
	}
	local := make(map[int32]int32, len(c.nodes))
	for i, v := range c.nodes {
		local[v] = int32(i)
		g.Linked = append(g.Linked, c.linked[v])
	}
	rows := map[int32]int32{}
	var relOf []int32 // relation row → relation id
	out := &km.ix.Graph().Out
	for i, v := range c.nodes {
		for p := out.Ptr[v]; p < out.Ptr[v+1]; p++ {
			j, ok := local[out.Idx[p]]
			r := int32(-1)
			if out.Rel != nil {
				r = out.Rel[p]
			}
			if !ok || !km.keepEdge(r) {
				continue
			}
			row, seen := rows[r]
			if !seen {
				row = int32(len(g.Rels))
				rows[r] = row
				z, cos, id := make([]float32, in.pca.K), float32(c.relSim(r)), int32(-1)
				if r >= 0 && int(r) < len(in.rels) {
					z = in.rels[r]
					if in.relIDs {
						id = r
					}
				}
				g.Rels = append(g.Rels, encoder.Relation{In: z, Cos: cos, ID: id}, encoder.Relation{In: z, Cos: cos, Inverse: true, ID: id})
				relOf = append(relOf, r, r)
			}
			g.Edges = append(g.Edges, encoder.Edge{Src: int32(i), Dst: j, Rel: row}, encoder.Edge{Src: j, Dst: int32(i), Rel: row + 1})
		}
	}
	if c.paths != nil {
		addPathInputs(g, c.paths, relOf)
	}
	return g
}

// addPathInputs adds the text side's reading to the encoder's inputs:
// each relation row's probability per hop, and each node's mass after
// each hop and their weighted sum, spreading over the candidate graph's
// edges from the linked seeds (the hop-0 seeds when none was linked).
// relOf gives each relation row's relation id.
func addPathInputs(g *encoder.Graph, p *encoder.Paths, relOf []int32) {
	T, n := len(p.P), g.Nodes()
	for i := range g.Rels {
		rel := &g.Rels[i]
		rel.Path = make([]float32, T)
		for t := range rel.Path {
			rel.Path[t] = float32(p.Rel(relOf[i], rel.Inverse, t+1))
		}
	}
	var edges []pathEdge
	for _, e := range g.Edges {
		r := relOf[e.Rel]
		if r < 0 { // an edge without a relation carries no mass
			continue
		}
		dir := 2 * r
		if g.Rels[e.Rel].Inverse {
			dir++
		}
		edges = append(edges, pathEdge{e.Src, e.Dst, dir})
	}
	sp := p.Spread(localPathGraph(n, edges), linkedRows(g.Linked, g.Hops), nil)
	g.PathMass = make([]float32, n*(T+1))
	for i := 0; i < n; i++ {
		for t := 1; t <= T; t++ {
			g.PathMass[i*(T+1)+t-1] = float32(sp.X[t][i])
		}
		g.PathMass[i*(T+1)+T] = float32(sp.Y[i])
	}
}
