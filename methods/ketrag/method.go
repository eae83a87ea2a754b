package ketrag

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/ctxtable"
	"github.com/gleaner-rag/gleaner/internal/vecmath"
	"github.com/gleaner-rag/gleaner/models/tiktoken"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// Options configure method "ketrag" (docs/methods.md §4.3).
type Options struct {
	// Budget (budget) is λ, the context's size in cl100k_base tokens, ≥ 1.
	Budget int
	// Theta (theta) is θ in [0, 1]: the keyword channel gets int(λ·(1−θ))
	// tokens, the skeleton channel what the keyword text leaves.
	Theta float64
	// TopKeywords (top-keywords) is how many keywords (by inner product
	// with the query) the keyword channel walks, ≥ 1.
	TopKeywords int
	// TopEntities (top-entities) is how many entities (by description
	// similarity) the skeleton channel selects, ≥ 1 (GraphRAG's 10 ×
	// oversampling 2).
	TopEntities int
	// TextUnitProp (text-unit-prop) is the skeleton budget's share for text
	// units, in [0, 1]; the rest is the entity and relationship tables.
	TextUnitProp float64
	// TopRelationships (top-relationships) bounds out-of-network
	// relationships per selected entity, ≥ 0.
	TopRelationships int
}

// DefaultOptions are KET-RAG's: λ = 12,000, θ = 0.5 (its README), 1,000
// keywords, 20 entities, half the skeleton budget for text units, 10
// relationships per entity.
func DefaultOptions() Options {
	return Options{Budget: 12000, Theta: 0.5, TopKeywords: 1000, TopEntities: 20, TextUnitProp: 0.5, TopRelationships: 10}
}

// Params binds every setting.
func (o *Options) Params(p *retrieve.Params) {
	p.Int(&o.Budget, "budget", "ketrag: λ, the context's size in cl100k_base tokens", retrieve.Within(1, retrieve.MaxContextBudget))
	p.Float(&o.Theta, "theta", "ketrag: θ in [0,1]; the keyword channel gets int(λ(1−θ)) tokens, the skeleton the rest", retrieve.Within(0.0, 1.0))
	p.Int(&o.TopKeywords, "top-keywords", "ketrag: keywords the keyword channel walks", retrieve.AtLeast(1))
	p.Int(&o.TopEntities, "top-entities", "ketrag: entities the skeleton channel selects", retrieve.AtLeast(1))
	p.Float(&o.TextUnitProp, "text-unit-prop", "ketrag: share of the skeleton's budget for text units (the rest: entities and relationships)", retrieve.Within(0.0, 1.0))
	p.Int(&o.TopRelationships, "top-relationships", "ketrag: out-of-network relationships per selected entity", retrieve.AtLeast(0))
}

// Validate checks every setting.
func (o Options) Validate() error { return retrieve.Validate(&o, (*Options).Params) }

func init() {
	retrieve.Must(retrieve.Register(retrieve.Def[Options]{Name: "ketrag", Summary: "KET-RAG: keyword and skeleton channels assembled into one token-budgeted context",
		Defaults: DefaultOptions, Params: (*Options).Params, Reads: []string{Section}, Tune: &retrieve.Tuning{}, Filters: true,
		Host: "context assembly runs on the host; keyword, entity and query search run on the backend",
		New:  func(ix *index.Index, env retrieve.Env, o Options) (retrieve.Method, error) { return New(ix, env, o) }}))
}

// ketrag is KET-RAG's retrieval (docs/methods.md §4.3): a keyword channel
// (query → keywords → chunks) and a skeleton channel (query → entities →
// relationships → text units), assembled into one context under λ tokens.
// Retrieve ranks the chunks the context quotes, in context order, then the
// keyword channel's other candidates, then dense ranking.
type ketrag struct {
	ix          *index.Index
	k           *KETRAG
	o           Options
	tok         *tiktoken.Encoder
	pieceChunks [][]int32
	be          engine.Backend
	// row token counts, computed once per row
	entityRows, pieceRows *ctxtable.TokenCache
}

// New makes method "ketrag" with o.
func New(ix *index.Index, env retrieve.Env, o Options) (retrieve.Method, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	k, err := Of(ix)
	if err != nil {
		return nil, fmt.Errorf("ketrag: %w", err)
	}
	if env.Backend == nil {
		return nil, retrieve.ErrNoBackend
	}
	tok, err := tiktoken.CL100K()
	if err != nil {
		return nil, err
	}
	return &ketrag{ix: ix, k: k, o: o, tok: tok, pieceChunks: pieceChunks(k), be: env.Backend,
		entityRows: ctxtable.NewTokenCache(k.EntityNames.Len()), pieceRows: ctxtable.NewTokenCache(k.Pieces.Len())}, nil
}

func (m *ketrag) Name() string { return "ketrag" }

// dense is exact vector search's top k, the ranking's tail (exact, so the
// measured KET-RAG figures hold whether or not the index has an HNSW graph).
func (m *ketrag) dense(ctx context.Context, q retrieve.Query, k int) ([]retrieve.Hit, error) {
	o := retrieve.DefaultVector()
	o.Search = retrieve.SearchExact
	v, err := retrieve.NewVector(m.ix, m.be, o)
	if err != nil {
		return nil, err
	}
	return v.Retrieve(ctx, q, k)
}

// pieceChunks maps every text unit to the core chunks its tokens came from.
func pieceChunks(k *KETRAG) [][]int32 {
	out := make([][]int32, len(k.PieceUnit))
	at := 0 // the piece's first token within its unit
	for p := range out {
		if p > 0 && k.PieceUnit[p] != k.PieceUnit[p-1] {
			at = 0
		}
		u := k.PieceUnit[p]
		end := at + int(k.PieceTokens[p])
		c0 := 0
		part := k.Core[k.UnitPtr[u]:k.UnitPtr[u+1]]
		for i, c := range part {
			if i > 0 && k.Separated() {
				c0++ // the line break between them
			}
			c1 := c0 + int(k.NodeTokens[c])
			if c0 < end && c1 > at {
				out[p] = append(out[p], c)
			}
			c0 = c1
		}
		at = end
	}
	return out
}

// Retrieve implements Method.
func (m *ketrag) Retrieve(ctx context.Context, q retrieve.Query, k int) ([]retrieve.Hit, error) {
	c, cand, err := m.assemble(ctx, q, m.o.Budget)
	if err != nil {
		return nil, err
	}
	order := appendDistinct(slices.Clone(c.Nodes), cand)
	if len(order) < k {
		dense, err := m.dense(ctx, q, k)
		if err != nil {
			return nil, err
		}
		for _, h := range dense {
			order = append(order, h.Index)
		}
	}
	seen := map[int32]bool{}
	var hits []retrieve.Hit
	for _, n := range order {
		if len(hits) == k {
			break
		}
		if !seen[n] {
			seen[n] = true
			hits = append(hits, retrieve.Hit{Index: n, Score: float32(-len(hits))})
		}
	}
	return hits, nil
}

// BuildContext implements ContextBuilder: KET-RAG's context with λ = budget.
func (m *ketrag) BuildContext(ctx context.Context, q retrieve.Query, budget int) (*retrieve.LLMContext, error) {
	if err := retrieve.CheckBudget(budget); err != nil {
		return nil, err
	}
	c, _, err := m.assemble(ctx, q, budget)
	return c, err
}

// assemble builds the context: the keyword channel within int(λ(1−θ)),
// then the skeleton channel within what is left, skeleton first. It also
// returns the keyword channel's candidates the context did not quote.
func (m *ketrag) assemble(ctx context.Context, q retrieve.Query, budget int) (*retrieve.LLMContext, []int32, error) {
	q = retrieve.Visible(m.ix, q) // deleted nodes stay out

	s, err := m.scopeOf(q)
	if err != nil {
		return nil, nil, err
	}
	qv, err := retrieve.EmbedQuery(ctx, m.ix, q)
	if errors.Is(err, index.ErrEmptyEmbedding) {
		qv = make([]float32, m.ix.Meta.Dims) // no known term: every similarity is 0, ties go to lower ids
	} else if err != nil {
		return nil, nil, err
	}
	sep := m.tok.Count("\n\n")
	kw, kwNodes, cand, err := m.keywordChannel(ctx, s, qv, int(float64(budget)*(1-m.o.Theta)))
	if err != nil {
		return nil, nil, err
	}
	tables := []*ctxtable.Table{kw}
	var skRows [][]int32
	if m.o.Theta > 0 {
		left := budget - kw.Used
		if kw.Rows > 0 {
			left -= sep
		}
		sk, nodes, err := m.skeletonChannel(ctx, s, qv, left, sep)
		if err != nil {
			return nil, nil, err
		}
		tables, skRows = append(sk, kw), nodes
	}
	out := joinTables(tables, []string{"entities", "relationships", "text units", "keyword sources"}[4-len(tables):], budget, m.tok)
	if len(tables) == 4 {
		for _, r := range skRows[:tables[2].Rows] {
			out.Nodes = appendDistinct(out.Nodes, r)
		}
	}
	out.Nodes = appendDistinct(out.Nodes, kwNodes[:kw.Rows])
	cand = append(kwNodes[kw.Rows:], cand...)
	return out, cand, nil
}

func appendDistinct(out, add []int32) []int32 {
	for _, n := range add {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// joinTables joins the non-empty tables with blank lines and counts the
// whole once; while it is over budget (tokens merging across a boundary),
// the last table with rows loses its last row. Sections report the tables'
// sizes as summed row by row.
func joinTables(ts []*ctxtable.Table, names []string, budget int, tok *tiktoken.Encoder) *retrieve.LLMContext {
	for {
		var parts []string
		out := &retrieve.LLMContext{}
		for i, t := range ts {
			s, n := t.Text(), 0
			if t.Rows > 0 {
				n = t.Used
			}
			out.Sections = append(out.Sections, retrieve.ContextSection{Name: names[i], Rows: t.Rows, Tokens: n})
			if s != "" {
				parts = append(parts, strings.TrimSuffix(s, "\n"))
			}
		}
		out.Text = strings.Join(parts, "\n\n")
		if out.Tokens = tok.Count(out.Text); out.Tokens <= budget {
			return out
		}
		for i := len(ts) - 1; i >= 0; i-- {
			if t := ts[i]; t.Rows > 0 {
				t.DropLast()
				break
			}
		}
	}
}

type scoredNode struct {
	n   int32
	sim float32
}

// keywordChannel walks the top keywords' chunks by similarity until 2T
// tokens are chosen, sorts them by similarity and quotes them within T.
func (m *ketrag) keywordChannel(ctx context.Context, s *scope, qv []float32, T int) (*ctxtable.Table, []int32, []int32, error) {
	t := ctxtable.New(m.tok, "-----Text source that may be relevant-----\nid|text\n", max(T, 0))
	if T <= 0 || m.k.Keywords.Len() == 0 {
		return t, nil, nil, nil
	}
	top, err := m.topRows(ctx, s, "ketrag.keyword_vectors", m.k.KeywordVecs, m.k.Keywords.Len(), s.keywordOK, qv, m.o.TopKeywords)
	if err != nil {
		return nil, nil, nil, err
	}
	sims := map[int32]float32{}
	sim := func(c int32) float32 {
		s, ok := sims[c]
		if !ok {
			s = vecmath.Dot(qv, m.ix.Vector(int(c)))
			sims[c] = s
		}
		return s
	}
	seen := map[int32]bool{}
	var sel []scoredNode
	tot := 0
walk:
	for _, h := range top {
		chunks := slices.Clone(m.k.KeywordChunks.Neighbors(int(h.Index)))
		slices.SortStableFunc(chunks, func(a, b int32) int { return cmp.Compare(sim(b), sim(a)) })
		for _, c := range chunks {
			if tot+int(m.k.NodeTokens[c]) > 2*T {
				break walk
			}
			if seen[c] {
				continue
			}
			seen[c] = true
			tot += int(m.k.NodeTokens[c])
			sel = append(sel, scoredNode{c, sim(c)})
		}
	}
	slices.SortStableFunc(sel, func(a, b scoredNode) int { return cmp.Compare(b.sim, a.sim) })
	nodes := make([]int32, 0, len(sel))
	var rest []int32
	for _, s := range sel {
		rw := retrieve.ChunkRow(m.ix, len(nodes), s.n)
		if len(rest) == 0 && t.Add(rw) {
			nodes = append(nodes, s.n)
		} else {
			rest = append(rest, s.n)
		}
	}
	return t, nodes, rest, nil
}

// skeletonChannel is GraphRAG's local search context over the skeleton
// (community share 0): the entity table and the relationships grown
// entity by entity within (1−TextUnitProp) of maxTokens, then the text
// units within TextUnitProp of it. It returns the three tables and the
// chunks the quoted text units came from.
func (m *ketrag) skeletonChannel(ctx context.Context, s *scope, qv []float32, maxTokens, sep int) ([]*ctxtable.Table, [][]int32, error) {
	k := m.k
	ne := k.EntityNames.Len()
	empty := func() []*ctxtable.Table {
		return []*ctxtable.Table{ctxtable.New(m.tok, "", 0), ctxtable.New(m.tok, "", 0), ctxtable.New(m.tok, "", 0)}
	}
	if maxTokens <= 0 || ne == 0 {
		return empty(), nil, nil
	}
	top, err := m.topRows(ctx, s, "ketrag.entity_vectors", k.EntityVecs, ne, s.entityOK, qv, m.o.TopEntities)
	if err != nil {
		return nil, nil, err
	}
	sel := make([]int32, len(top))
	for i, h := range top {
		sel[i] = h.Index
	}
	textBudget := int(float64(maxTokens) * m.o.TextUnitProp)
	localBudget := maxTokens - textBudget - 2*sep // room for the blank lines between the three tables
	ents := ctxtable.New(m.tok, "-----Entities-----\nid|entity|description|number of relationships\n", max(localBudget, 0))
	for _, e := range sel {
		rw := row(strconv.Itoa(int(e)), k.EntityNames.At(int(e)), k.EntityDescs.At(int(e)), strconv.Itoa(int(s.rank[e])))
		n := 0
		if s.full { // the row, rank included, is the same on every query
			n = m.entityRows.Count(m.tok, int(e), rw)
		} else {
			n = m.tok.Count(rw)
		}
		if !ents.AddCounted(rw, n) {
			break
		}
	}
	rels := m.relationshipTable(s, sel, localBudget, ents.Used)
	units, rowNodes := m.textUnitTable(s, sel, textBudget)
	return []*ctxtable.Table{ents, rels, units}, rowNodes, nil
}

// row is a table row; line breaks inside a field become spaces, so every
// row is one line of the table.
func row(cols ...string) string {
	for i, c := range cols {
		cols[i] = strings.ReplaceAll(c, "\n", " ")
	}
	return strings.Join(cols, "|") + "\n"
}

func (s *scope) relRank(k *KETRAG, r int32) int {
	return int(s.rank[k.RelSrc[r]] + s.rank[k.RelDst[r]])
}

// relationshipTable grows the selected entities one by one, each time
// building the relationship table truncated at the local budget, and keeps
// the last one that fits beside the entity table (GraphRAG's
// _build_local_context: when even the first does not fit, none is kept).
func (m *ketrag) relationshipTable(s *scope, sel []int32, budget, entityTokens int) *ctxtable.Table {
	const header = "-----Relationships-----\nid|source|target|description|weight|rank\n"
	best := ctxtable.New(m.tok, header, 0)
	rowTokens := map[int32]int{}
	for i := 1; i <= len(sel); i++ {
		t := ctxtable.New(m.tok, header, max(budget, 0))
		for _, r := range m.filterRelationships(s, sel[:i]) {
			rw := m.relRow(s, r)
			n, ok := rowTokens[r]
			if !ok {
				n = m.tok.Count(rw)
				rowTokens[r] = n
			}
			if len(t.Lines) == 0 || t.Used+n > budget {
				break
			}
			t.Lines, t.Counts, t.Used, t.Rows = append(t.Lines, rw), append(t.Counts, n), t.Used+n, t.Rows+1
		}
		if entityTokens+t.Used > budget {
			break
		}
		best = t
	}
	return best
}

func (m *ketrag) relRow(s *scope, r int32) string {
	k := m.k
	return row(strconv.Itoa(int(r)), k.EntityNames.At(int(k.RelSrc[r])), k.EntityNames.At(int(k.RelDst[r])), k.RelDescs.At(int(r)),
		pyFloat(float64(k.RelWeight[r])), strconv.Itoa(s.relRank(k, r)))
}

// pyFloat formats a weight as Python's str(float) does ("1.0", "2.5").
func pyFloat(x float64) string {
	s := strconv.FormatFloat(x, 'g', -1, 32)
	if !strings.ContainsAny(s, ".eIN") {
		s += ".0"
	}
	return s
}

// filterRelationships is GraphRAG's _filter_relationships: relationships
// among the selected entities by rank, then those leaving the selection,
// ordered by how many selected entities their outside end links to, then
// rank, at most TopRelationships per selected entity.
func (m *ketrag) filterRelationships(s *scope, sel []int32) []int32 {
	in := map[int32]bool{}
	for _, e := range sel {
		in[e] = true
	}
	seen := map[int32]bool{}
	var inNet, outNet []int32
	for _, e := range sel {
		for _, r := range s.relationships(m.k, e) {
			if seen[r] {
				continue
			}
			seen[r] = true
			if in[m.k.RelSrc[r]] && in[m.k.RelDst[r]] {
				inNet = append(inNet, r)
			} else {
				outNet = append(outNet, r)
			}
		}
	}
	byRank := func(a, b int32) int {
		return cmp.Or(cmp.Compare(s.relRank(m.k, b), s.relRank(m.k, a)), cmp.Compare(a, b))
	}
	slices.SortFunc(inNet, byRank)
	if len(outNet) <= 1 {
		return append(inNet, outNet...)
	}
	outside := func(r int32) int32 {
		if in[m.k.RelSrc[r]] {
			return m.k.RelDst[r]
		}
		return m.k.RelSrc[r]
	}
	links := map[int32]map[int32]bool{}
	for _, r := range outNet {
		o := outside(r)
		if links[o] == nil {
			links[o] = map[int32]bool{}
		}
		links[o][m.k.RelSrc[r]^m.k.RelDst[r]^o] = true // the selected end
	}
	slices.SortFunc(outNet, func(a, b int32) int {
		return cmp.Or(cmp.Compare(len(links[outside(b)]), len(links[outside(a)])), byRank(a, b))
	})
	return append(inNet, outNet[:min(len(outNet), m.o.TopRelationships*len(sel))]...)
}

// textUnitTable quotes the selected entities' text units, by entity order
// then by how many of the entity's relationships came from the unit
// (GraphRAG's _build_text_unit_context; a unit is quoted once, where
// GraphRAG's never-filled dedup set lets it repeat).
func (m *ketrag) textUnitTable(s *scope, sel []int32, budget int) (*ctxtable.Table, [][]int32) {
	t := ctxtable.New(m.tok, "-----Sources-----\nid|text\n", max(budget, 0))
	type unit struct {
		p       int32
		order   int
		numRels int
	}
	var list []unit
	for i, e := range sel {
		count := map[int32]int{}
		for _, r := range s.relationships(m.k, e) {
			for _, p := range m.k.RelPieces.Neighbors(int(r)) {
				count[p]++
			}
		}
		for _, p := range m.k.EntityPieces.Neighbors(int(e)) {
			list = append(list, unit{p, i, count[p]})
		}
	}
	slices.SortStableFunc(list, func(a, b unit) int { return cmp.Or(cmp.Compare(a.order, b.order), cmp.Compare(b.numRels, a.numRels)) })
	quoted := map[int32]bool{}
	var rowNodes [][]int32 // the chunks behind each quoted row
	for _, u := range list {
		if quoted[u.p] {
			continue
		}
		quoted[u.p] = true
		rw := row(strconv.Itoa(int(u.p)), m.k.Pieces.At(int(u.p)))
		if !t.AddCounted(rw, m.pieceRows.Count(m.tok, int(u.p), rw)) {
			break
		}
		rowNodes = append(rowNodes, m.pieceChunks[u.p])
	}
	return t, rowNodes
}
