package retrieve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels"
)

func init() {
	mustRegister("kg-seeds", func(ix *index.Index, o Options) (Method, error) { return newKGMethod(ix, o, false) })
	mustRegister("kg-khop", func(ix *index.Index, o Options) (Method, error) { return newKGMethod(ix, o, true) })
}

// KGOptions configure SeedER's first stages and their baselines
// (docs/methods.md §3.1): K0 dictionary seeds, then K-hop-with-filtering.
type KGOptions struct {
	K0   int // seeds kept from dictionary linking (the rest filled by cosine), ≥ 1
	KHop graphops.KHopFilterOptions
	// KeepLinked makes kg-khop rank the dictionary-linked seeds too; by
	// default they are left out, being the question's own entities.
	KeepLinked bool
}

// DefaultKGOptions: k0 = 5 (PRIME, MAG) and the MiniLM PRIME reference
// quotas (200, 200, 100), cap 500.
func DefaultKGOptions() KGOptions {
	return KGOptions{K0: 5, KHop: graphops.DefaultKHopFilterOptions()}
}

func (o KGOptions) validate() error {
	if o.K0 < 1 {
		return fmt.Errorf("retrieve: kg: k0 must be ≥ 1, got %d", o.K0)
	}
	return o.KHop.Validate()
}

// kgMethod is a SeedER baseline over a knowledge-graph index: kg-seeds
// ranks stage 1's seeds (dictionary matches, then the nodes nearest the
// query), kg-khop ranks stage 2's candidate graph by cosine with the query.
type kgMethod struct {
	ix      *index.Index
	o       KGOptions
	kinds   []string // edge kinds the expansion follows (none: all)
	khop    bool
	vec     *vector
	once    sync.Once
	linker  *entityLinker
	relUnit [][]float32 // relation id → its name's unit vector (nil: none)
	relErr  error
}

func newKGMethod(ix *index.Index, o Options, khop bool) (Method, error) {
	if err := o.KG.validate(); err != nil {
		return nil, err
	}
	if o.Backend == nil {
		return nil, errNoBackend
	}
	if khop {
		if err := requireGraph(ix, o, "kg-khop"); err != nil {
			return nil, err
		}
	}
	return &kgMethod{ix: ix, o: o.KG, kinds: o.GraphKinds, khop: khop, vec: &vector{ix, o.Backend}}, nil
}

// keepEdge says whether the expansion follows an edge of relation r: all
// edges, or those of Options.GraphKinds (e.g. only "kg" in an index that
// also holds a knn graph).
func (m *kgMethod) keepEdge(r int32) bool {
	if len(m.kinds) == 0 {
		return true
	}
	if r < 0 {
		return false
	}
	kind, _ := m.ix.RelationName(r)
	return slices.Contains(m.kinds, kind)
}

func (m *kgMethod) Name() string {
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
			m.relUnit = unitRows(vecs, len(names), m.ix.Meta.Dims)
		}
	})
	return m.relErr
}

// unitRows normalises the n rows of vecs (d values each); a short or zero
// row stays nil.
func unitRows(vecs []float32, n, d int) [][]float32 {
	out := make([][]float32, n)
	for r := range out {
		if (r+1)*d <= len(vecs) {
			out[r], _ = unit(vecs[r*d : (r+1)*d])
		}
	}
	return out
}

// Retrieve implements Method.
func (m *kgMethod) Retrieve(ctx context.Context, q Query, k int) ([]kernels.Hit, error) {
	if !m.khop {
		_, sims, err := m.querySims(ctx, q)
		if err != nil {
			return nil, err
		}
		seeds, _ := m.linker.seeds(q.Text, sims, m.o.K0, k)
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
	slices.SortStableFunc(nodes, func(a, b int32) int { return cmp.Or(cmp.Compare(c.sims[b], c.sims[a]), cmp.Compare(a, b)) })
	return ranked(nodes[:min(k, len(nodes))], c.sims), nil
}

// querySims prepares the method once, embeds the question and returns its
// vector and every node's cosine with it.
func (m *kgMethod) querySims(ctx context.Context, q Query) (qv, sims []float32, err error) {
	if err := m.prepare(ctx); err != nil {
		return nil, nil, err
	}
	if qv, err = m.queryVector(ctx, q); err != nil {
		return nil, nil, err
	}
	sims, err = m.similarities(qv)
	return qv, sims, err
}

// queryVector embeds the question (zeros for text with no known term).
func (m *kgMethod) queryVector(ctx context.Context, q Query) ([]float32, error) {
	qv, err := m.vec.embed(ctx, q)
	if errors.Is(err, index.ErrEmptyEmbedding) {
		return make([]float32, m.ix.Meta.Dims), nil
	}
	return qv, err
}

// similarities is every node's cosine with the query: one matrix–vector
// product through the engine's GEMM (a scalar loop took 7 ms of a MetaQA
// query's 43 k × 256 values).
func (m *kgMethod) similarities(qv []float32) ([]float32, error) {
	n, d := m.ix.N(), m.ix.Meta.Dims
	sims := make([]float32, n)
	err := kernels.Gemm(kernels.GemmArgs{M: n, N: 1, K: d, Alpha: 1, A: m.ix.Vectors[:n*d], B: qv, C: sims})
	return sims, err
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
	relSims []float64 // relation id → cos(q, relation name), 0 without one
}

// candidates runs stage 1 (seeds) and stage 2 (K-hop-with-filtering).
func (m *kgMethod) candidates(ctx context.Context, q Query) (*kgCandidates, error) {
	qv, sims, err := m.querySims(ctx, q)
	if err != nil {
		return nil, err
	}
	c := &kgCandidates{qv: qv, sims: sims, linked: map[int32]bool{}, relSims: make([]float64, len(m.relUnit))}
	for r, v := range m.relUnit { // once per query, not once per edge visited
		if v != nil {
			c.relSims[r] = float64(dot(qv, v))
		}
	}
	seeds, linked := m.linker.seeds(q.Text, c.sims, m.o.K0, m.o.K0)
	for _, v := range seeds[:linked] {
		c.linked[v] = true
	}
	c.nodes, c.hops, err = graphops.KHopFilter(ctx, m.ix.Graph, seeds, m.o.KHop, graphops.KHopScores{
		Edge: m.keepEdge,
		Node: func(u int32) float64 { return float64(c.sims[u]) },
		Rel:  c.relSim,
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
func ranked(nodes []int32, sims []float32) []kernels.Hit {
	out := make([]kernels.Hit, len(nodes))
	for i, v := range nodes {
		out[i] = kernels.Hit{Index: v, Score: sims[v]}
	}
	return out
}
