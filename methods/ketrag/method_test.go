package ketrag_test

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/eval"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/indextest"
	"github.com/gleaner-rag/gleaner/methods/internal/testindex"
	"github.com/gleaner-rag/gleaner/methods/ketrag"
	"github.com/gleaner-rag/gleaner/models/kgextract"
	"github.com/gleaner-rag/gleaner/models/lexical"
	"github.com/gleaner-rag/gleaner/models/tiktoken"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

// noKETRAG is an index without KET-RAG's structures.
func noKETRAG(t *testing.T) *index.Index {
	t.Helper()
	c := synth.Generate(synth.Options{People: 20, Cities: 4, Countries: 2, Bands: 4, Queries: 3, Seed: 5})
	dir := filepath.Join(t.TempDir(), "ix")
	if err := index.Build(context.Background(), c, dir, index.WithoutHead()); err != nil {
		t.Fatal(err)
	}
	return testindex.Open(t, dir)
}

func openKETRAG(t *testing.T) (*index.Index, *corpus.Corpus) {
	t.Helper()
	c := synth.Generate(synth.Options{People: 60, Cities: 12, Countries: 4, Bands: 15, Queries: 20, Seed: 5})
	lsa := lexical.DefaultLSA()
	lsa.Dims = 16
	dir := indextest.Build(t, c, index.WithLSA(lsa))
	testindex.AddKETRAG(t, c, dir)
	ix := indextest.Open(t, dir)
	return ix, c
}

// TestKETRAGContextRespectsTheBudget: for every budget and θ, the context
// is at most the budget in cl100k tokens, its reported size is exact, and
// the channels appear as θ says.
func TestKETRAGContextRespectsTheBudget(t *testing.T) {
	ix, c := openKETRAG(t)
	tok, _ := tiktoken.CL100K()
	for _, theta := range []float64{0, 0.5, 1} {
		o := ketrag.DefaultOptions()
		o.Theta = theta
		m, err := ketrag.New(ix, testindex.Env(), o)
		if err != nil {
			t.Fatal(err)
		}
		cb := m.(retrieve.ContextBuilder)
		for _, budget := range []int{1, 20, 150, 600, 3000, 12000} {
			for _, q := range c.Queries[:8] {
				ctx, err := cb.BuildContext(context.Background(), retrieve.Query{ID: q.ID, Text: q.Text}, budget)
				if err != nil {
					t.Fatal(err)
				}
				if n := tok.Count(ctx.Text); n != ctx.Tokens || n > budget {
					t.Fatalf("θ %v budget %d: context of %d tokens (reported %d)", theta, budget, n, ctx.Tokens)
				}
				hasKW := strings.Contains(ctx.Text, "-----Text source that may be relevant-----")
				hasSK := strings.Contains(ctx.Text, "-----Entities-----")
				if budget >= 3000 && (hasKW != (theta < 1) || hasSK != (theta > 0)) {
					t.Fatalf("θ %v budget %d: keyword channel %v, skeleton %v", theta, budget, hasKW, hasSK)
				}
				if theta == 0 && budget >= 600 {
					for _, s := range ctx.Sections {
						if s.Name == "keyword sources" && s.Tokens > budget {
							t.Fatalf("keyword channel over T: %+v", s)
						}
					}
				}
				if len(ctx.Nodes) == 0 && budget >= 600 {
					t.Fatalf("θ %v budget %d: a context quoting no chunk", theta, budget)
				}
			}
		}
	}
}

// TestKETRAGKeywordChannelWithinT: with θ = 0.5 the keyword table stays
// within int(λ/2) tokens, and the skeleton gets what it leaves.
func TestKETRAGKeywordChannelWithinT(t *testing.T) {
	ix, c := openKETRAG(t)
	m, _ := retrieve.NewNamed("ketrag", ix, testindex.Env())
	for _, budget := range []int{400, 2000} {
		ctx, err := m.(retrieve.ContextBuilder).BuildContext(context.Background(), retrieve.Query{Text: c.Queries[0].Text}, budget)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, s := range ctx.Sections {
			total += s.Tokens
			if s.Name == "keyword sources" && s.Tokens > budget/2 {
				t.Fatalf("keyword table %d tokens > T = %d", s.Tokens, budget/2)
			}
		}
		if total > budget {
			t.Fatalf("sections sum to %d > %d", total, budget)
		}
	}
}

func TestKETRAGRetrieveRanksContextChunksFirst(t *testing.T) {
	ix, c := openKETRAG(t)
	m, _ := retrieve.NewNamed("ketrag", ix, testindex.Env())
	q := retrieve.Query{Text: c.Queries[1].Text}
	hits, err := m.Retrieve(context.Background(), q, 30)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 30 {
		t.Fatalf("%d hits", len(hits))
	}
	seen := map[int32]bool{}
	for _, h := range hits {
		if seen[h.Index] {
			t.Fatal("a chunk ranked twice")
		}
		seen[h.Index] = true
	}
	ctx, _ := m.(retrieve.ContextBuilder).BuildContext(context.Background(), q, ketrag.DefaultOptions().Budget)
	n := min(len(ctx.Nodes), 30)
	for i := 0; i < n; i++ {
		if hits[i].Index != ctx.Nodes[i] {
			t.Fatalf("rank %d: %d, the context quotes %d", i, hits[i].Index, ctx.Nodes[i])
		}
	}
}

func TestKETRAGErrors(t *testing.T) {
	ix := noKETRAG(t)
	if _, err := retrieve.NewNamed("ketrag", ix, testindex.Env()); !errors.Is(err, ketrag.ErrNoKETRAG) || !strings.Contains(err.Error(), "graph build --kind ketrag") {
		t.Fatalf("no structures: %v", err)
	}
	for _, edit := range []func(*ketrag.Options){
		func(k *ketrag.Options) { k.Budget = 0 },
		func(k *ketrag.Options) { k.Theta = 1.5 },
		func(k *ketrag.Options) { k.TopKeywords = 0 },
		func(k *ketrag.Options) { k.TextUnitProp = -0.1 },
	} {
		o := ketrag.DefaultOptions()
		edit(&o)
		if o.Validate() == nil {
			t.Errorf("accepted %+v", o)
		}
	}
}

// TestFillContext: baselines' contexts are their top nodes in order,
// within the budget.
func TestFillContext(t *testing.T) {
	ix, c := openKETRAG(t)
	tok, _ := tiktoken.CL100K()
	m, _ := retrieve.NewNamed("bm25", ix, testindex.Env())
	for _, budget := range []int{5, 100, 1000} {
		ctx, err := retrieve.BuildContext(context.Background(), m, ix, retrieve.Query{Text: c.Queries[2].Text}, budget, 100)
		if err != nil {
			t.Fatal(err)
		}
		if n := tok.Count(ctx.Text); n > budget || n != ctx.Tokens {
			t.Fatalf("budget %d: %d tokens", budget, n)
		}
		hits, _ := m.Retrieve(context.Background(), retrieve.Query{Text: c.Queries[2].Text}, len(ctx.Nodes))
		for i, h := range hits {
			if ctx.Nodes[i] != h.Index {
				t.Fatal("FillContext changed the ranking's order")
			}
		}
		if budget == 1000 && (len(ctx.Nodes) == 0 || !slices.ContainsFunc(ctx.Nodes, func(n int32) bool { return strings.Contains(ctx.Text, ix.Text(int(n))) })) {
			t.Fatal("the context does not quote its nodes")
		}
	}
	if _, err := retrieve.BuildContext(context.Background(), m, ix, retrieve.Query{Text: "x"}, 0, 10); err == nil {
		t.Fatal("budget 0 accepted")
	}
}

// TestEvaluateContextBudgets: every method's context is scored at each
// budget, within it, and a ranking's context answer recall cannot fall as
// the budget grows (the smaller context is a prefix of the larger).
func TestEvaluateContextBudgets(t *testing.T) {
	ix, c := openKETRAG(t)
	var qs []corpus.Query
	for _, q := range c.Queries {
		v, _ := ix.Lookup(q.Gold[0])
		first := strings.Fields(ix.Text(int(v)))[0]
		qs = append(qs, corpus.Query{ID: q.ID, Text: q.Text, Answers: []string{first}})
	}
	var ms []retrieve.Method
	for _, name := range []string{"ketrag", "bm25", "vector"} {
		m, err := retrieve.NewNamed(name, ix, testindex.Env())
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	rep, err := eval.Evaluate(context.Background(), ix, qs, ms, eval.Options{ContextBudgets: []int{100, 1500}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Depth < eval.ContextDepth {
		t.Fatalf("rankings to depth %d cannot fill a context", rep.Depth)
	}
	for _, mr := range rep.Methods {
		small, large := mr.Metrics["context_answer_recall@100"], mr.Metrics["context_answer_recall@1500"]
		if mr.Metrics["context_tokens@1500"] > 1500 || mr.Metrics["context_tokens@100"] > 100 || mr.Metrics["context_tokens@1500"] < 200 {
			t.Fatalf("%s: context sizes %v and %v", mr.Method, mr.Metrics["context_tokens@100"], mr.Metrics["context_tokens@1500"])
		}
		if mr.Method != "ketrag" && small > large {
			t.Fatalf("%s: recall %v at 100 tokens > %v at 1500", mr.Method, small, large)
		}
		if large == 0 {
			t.Fatalf("%s: no context holds an answer", mr.Method)
		}
	}
	if _, err := eval.Evaluate(context.Background(), ix, qs, ms[:1], eval.Options{ContextBudgets: []int{0}}); err == nil {
		t.Fatal("a budget of 0 accepted")
	}
}

// TestKETRAGFiltersDiscloseNothing: KET-RAG's structures merge what many
// chunks say, so a filtered query cannot equal a rebuild; what it must do
// is quote and rank nothing derived from a filtered-out chunk. Every
// sentence of node i starts and ends with the word mk<i>x, and the
// extractor describes every entity and relationship with its whole unit's
// text (as an LLM may draw on all of it); under several filters no hidden
// node's word may reach the context (entity and relationship
// descriptions, text units, keyword sources), and every quoted node and
// hit is allowed. The unfiltered contexts quote hidden nodes' words, so a
// leak would show.
func TestKETRAGFiltersDiscloseNothing(t *testing.T) {
	c := synth.Generate(synth.Options{People: 60, Cities: 12, Countries: 4, Bands: 15, Queries: 20, Seed: 7})
	for i := range c.Nodes {
		m := marker(i)
		c.Nodes[i].Text = m + " " + strings.ReplaceAll(strings.TrimSuffix(c.Nodes[i].Text, ".")+".", ". ", " "+m+". "+m+" ")
		c.Nodes[i].Text = strings.TrimSuffix(c.Nodes[i].Text, ".") + " " + m + "."
		c.Nodes[i].Meta = map[string]any{"team": []string{"red", "green", "blue"}[i*7%3], "n": float64(i)}
	}
	lsa := lexical.DefaultLSA()
	lsa.Dims = 16
	dir := indextest.Build(t, c, index.WithLSA(lsa))
	testindex.AddKETRAGWith(t, c, dir, func(ex kgextract.Extractor) kgextract.Extractor { return unitWide{ex} })
	ix := indextest.Open(t, dir)
	o := ketrag.DefaultOptions()
	o.Budget = 3000
	m, err := ketrag.New(ix, testindex.Env(), o)
	if err != nil {
		t.Fatal(err)
	}
	cb := m.(retrieve.ContextBuilder)
	leaksUnfiltered, skeletonRows := 0, 0
	filters := []*filter.Filter{{Field: "team", Eq: "red"}, {Not: &filter.Filter{Field: "team", Eq: "blue"}},
		{Field: "n", Lt: float64(len(c.Nodes) / 2)}, {Field: "n", Gte: float64(len(c.Nodes) / 3)}}
	for _, f := range filters {
		allow, err := filter.Eval(ix, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, cq := range c.Queries {
			q := retrieve.Query{ID: cq.ID, Text: cq.Text}
			open, err := cb.BuildContext(context.Background(), q, o.Budget)
			if err != nil {
				t.Fatal(err)
			}
			leaksUnfiltered += len(hiddenWords(ix, c, allow, open.Text))
			q.Allow = allow
			got, err := cb.BuildContext(context.Background(), q, o.Budget)
			if err != nil {
				t.Fatal(err)
			}
			if w := hiddenWords(ix, c, allow, got.Text); len(w) > 0 {
				t.Fatalf("filter %s, query %q: the context quotes hidden nodes' words %v", f, q.Text, w)
			}
			for _, n := range got.Nodes {
				if !allow.Has(int(n)) {
					t.Fatalf("filter %s: the context names hidden node %d", f, n)
				}
			}
			for _, s := range got.Sections[:len(got.Sections)-1] {
				skeletonRows += s.Rows
			}
			hits, err := m.Retrieve(context.Background(), q, 20)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hits {
				if !allow.Has(int(h.Index)) {
					t.Fatalf("filter %s: hit %d is hidden", f, h.Index)
				}
			}
		}
	}
	if leaksUnfiltered == 0 || skeletonRows == 0 {
		t.Fatalf("the test shows nothing: %d hidden words unfiltered, %d skeleton rows filtered", leaksUnfiltered, skeletonRows)
	}
}

func marker(i int) string { return "mk" + strconv.Itoa(i) + "x" }

var markerWord = regexp.MustCompile(`\bmk([0-9]+)x\b`)

// hiddenWords are the markers in text of c's nodes outside allow.
func hiddenWords(ix *index.Index, c *corpus.Corpus, allow *filter.Set, text string) []string {
	var out []string
	for _, m := range markerWord.FindAllStringSubmatch(text, -1) {
		i, _ := strconv.Atoi(m[1])
		if v, _ := ix.Lookup(c.Nodes[i].ID); !allow.Has(int(v)) {
			out = append(out, m[0])
		}
	}
	return out
}

// unitWide describes everything it extracts with the whole text.
type unitWide struct{ kgextract.Extractor }

func (u unitWide) Extract(ctx context.Context, text string) (kgextract.Graph, kgextract.Usage, error) {
	g, usage, err := u.Extractor.Extract(ctx, text)
	for i := range g.Entities {
		g.Entities[i].Description = text
	}
	for i := range g.Relationships {
		g.Relationships[i].Description = text
	}
	return g, usage, err
}
