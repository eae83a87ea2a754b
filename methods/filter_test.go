package methods_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/methods/internal/testindex"
	"github.com/gleaner-rag/gleaner/methods/seeder"
	"github.com/gleaner-rag/gleaner/methods/trigraph"
	"github.com/gleaner-rag/gleaner/models/lexical"
	"github.com/gleaner-rag/gleaner/models/ner"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

// Every method either honours a filter or refuses it: with an empty set a
// method that declares Filters returns nothing, and every other method
// returns ErrFilterUnsupported; none answers as if unfiltered.
func TestEveryMethodHonoursOrRefusesFilters(t *testing.T) {
	ix, qs := testindex.Shared(t)
	none := filter.NewSet(ix.N())
	for _, name := range retrieve.Names() {
		m := testindex.Method(t, ix, name)
		q := qs[0]
		q.Allow = none
		hits, err := m.Retrieve(context.Background(), q, 10)
		switch {
		case retrieve.SupportsFilters(name) && (err != nil || len(hits) != 0):
			t.Errorf("%s: an empty filter gave %v, %v; want no hits", name, hits, err)
		case !retrieve.SupportsFilters(name) && !errors.Is(err, retrieve.ErrFilterUnsupported):
			t.Errorf("%s: declares no filter support but answered a filtered query: %v, %v", name, hits, err)
		}
		if sm, ok := m.(retrieve.StreamingMethod); ok && !retrieve.SupportsFilters(name) {
			err := sm.RetrieveStream(context.Background(), q, 10, func([]retrieve.Hit) bool { return true })
			if !errors.Is(err, retrieve.ErrFilterUnsupported) {
				t.Errorf("%s: streamed a filtered query: %v", name, err)
			}
		}
	}
}

// The non-disclosure property: for every method that honours filters, on
// random graphs with random metadata and random filters and ACLs, the
// results with a filter equal the results on an index built from the
// corpus with the filtered-out nodes (and their edges) removed: the same
// nodes, in the same order, with the same scores. Texts embed with a
// corpus-independent embedder, so both indexes embed alike; BM25's
// statistics are the reduced corpus's.
func TestFiltersEqualDeletion(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds 15 indexes")
	}
	var methods []string
	for _, name := range retrieve.Names() {
		if retrieve.SupportsFilters(name) && !slices.Contains(mergedStructures, name) {
			methods = append(methods, name)
		}
	}
	if len(methods) < 7 {
		t.Fatalf("only %v declare filter support", methods)
	}
	for seed := uint64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewPCG(seed, 17))
		c := synth.Generate(synth.Options{People: 40, Cities: 8, Countries: 3, Bands: 12, Queries: 20, Seed: seed})
		randomMeta(rng, c)
		dir := t.TempDir()
		ix := buildEmbedded(t, c, dir, "full", nil)
		ix = withTriGraph(t, ix, c)
		enc := trainSeeder(t, ix, c)
		ix = withSeeder(t, ix, enc)
		qs := queries(c)[14:] // the first 14 train and tune the encoder
		checked := 0
		for trial := 0; checked < 4 && trial < 40; trial++ {
			f := randomFilter(rng, 2)
			allow, err := filter.Eval(ix, f)
			if err != nil {
				t.Fatal(err)
			}
			if allow.Len() < 10 || allow.Len() == ix.N() {
				continue // too few nodes to rank, or nothing filtered
			}
			checked++
			red := reduced(c, allow, ix)
			rix := buildEmbedded(t, red, dir, fmt.Sprintf("reduced-%d", trial), ix.HeadFile())
			rix = withTriGraph(t, rix, red)
			rix = withSeeder(t, rix, enc)
			for _, name := range methods {
				compareFiltered(t, fmt.Sprintf("seed %d, %s, filter %s", seed, name, f), ix, rix, name, qs, allow)
			}
			// An evidence set larger than the allowed nodes: its scores count
			// down from the number of nodes, which must be the allowed ones'.
			compareFiltered(t, fmt.Sprintf("seed %d, fuserag K=1000, filter %s", seed, f), ix, rix, "fuserag", qs, allow, "fuserag-k", "1000")
			// The Tri-Graph's other passage scores, and PageRank without the
			// consecutive-passage edges.
			for _, set := range [][]string{{"passage-scores", "bm25"}, {"passage-scores", "hybrid"}, {"adjacent-passages", "false"}} {
				compareFiltered(t, fmt.Sprintf("seed %d, nexusrag %v, filter %s", seed, set, f), ix, rix, "nexusrag", qs, allow, set...)
			}
		}
		if checked < 4 {
			t.Fatalf("seed %d: only %d usable random filters", seed, checked)
		}
	}
}

// mergedStructures are the methods whose index sections merge what many
// nodes say (KET-RAG's skeleton and keyword vectors), which no filter can
// split back: under a filter they use only what allowed nodes alone gave,
// so they cannot equal a rebuild. Their tests check that nothing of a
// filtered-out node reaches their results (TestKETRAGFiltersDiscloseNothing).
var mergedStructures = []string{"ketrag"}

// compareFiltered runs method name (with settings, name–value pairs) on
// ix under allow and on rix (the reduced index) unfiltered, and wants the
// same ranking.
func compareFiltered(t *testing.T, what string, ix, rix *index.Index, name string, qs []retrieve.Query, allow *filter.Set, settings ...string) {
	t.Helper()
	full := testindex.Method(t, ix, name, settings...)
	red, err := testindex.NewMethod(rix, name, settings...)
	if errors.Is(err, retrieve.ErrNoGraph) {
		return // the reduced corpus kept no edge: the method cannot run on it at all
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	defer retrieve.CloseAll(context.Background(), red)
	for _, q := range qs {
		want, err := red.Retrieve(context.Background(), q, 10)
		if err != nil {
			t.Fatalf("%s: reduced: %v", what, err)
		}
		fq := q
		fq.Allow = allow
		got, err := full.Retrieve(context.Background(), fq, 10)
		if err != nil {
			t.Fatalf("%s: filtered: %v", what, err)
		}
		if msg := sameRanking(ix, got, rix, want); msg != "" {
			t.Errorf("%s, query %q: %s", what, q.Text, msg)
		}
		for _, h := range got {
			if !allow.Has(int(h.Index)) {
				t.Fatalf("%s: node %s outside the filter was returned", what, ix.NodeID(int(h.Index)))
			}
		}
	}
}

// sameRanking compares rankings by node id; scores must agree to float32
// rounding, and ids may differ only between near-equal scores.
func sameRanking(ix *index.Index, got []retrieve.Hit, rix *index.Index, want []retrieve.Hit) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d hits filtered, %d on the reduced index", len(got), len(want))
	}
	for i := range got {
		g, w := got[i].Score, want[i].Score
		if tol := 1e-5 * max(1, math.Abs(float64(w))); math.Abs(float64(g-w)) > tol {
			return fmt.Sprintf("rank %d: score %v filtered, %v reduced", i+1, g, w)
		}
		gid, wid := ix.NodeID(int(got[i].Index)), rix.NodeID(int(want[i].Index))
		if gid != wid && !nearTie(want, i) {
			return fmt.Sprintf("rank %d: %s filtered, %s reduced", i+1, gid, wid)
		}
	}
	return ""
}

func nearTie(hits []retrieve.Hit, i int) bool {
	close := func(j int) bool {
		return j >= 0 && j < len(hits) && math.Abs(float64(hits[i].Score-hits[j].Score)) <= 1e-5*max(1, math.Abs(float64(hits[i].Score)))
	}
	return close(i-1) || close(i+1)
}

var teams = []string{"red", "green", "blue"}
var groups = []string{"eng", "legal", "hr"}

// randomMeta gives each node a team, a year and, for some, ACL groups.
func randomMeta(rng *rand.Rand, c *corpus.Corpus) {
	for i := range c.Nodes {
		m := map[string]any{"team": teams[rng.IntN(3)], "year": float64(2015 + rng.IntN(11))}
		if rng.IntN(5) < 2 {
			var acl []any
			for _, g := range groups {
				if rng.IntN(2) == 0 {
					acl = append(acl, g)
				}
			}
			m["acl"] = acl
		}
		c.Nodes[i].Meta = m
	}
}

// randomFilter is a random expression of the comparisons, ACLs and
// combinators, at most depth deep.
func randomFilter(rng *rand.Rand, depth int) *filter.Filter {
	if depth > 0 && rng.IntN(3) == 0 {
		switch rng.IntN(3) {
		case 0:
			return &filter.Filter{And: []*filter.Filter{randomFilter(rng, depth-1), randomFilter(rng, depth-1)}}
		case 1:
			return &filter.Filter{Or: []*filter.Filter{randomFilter(rng, depth-1), randomFilter(rng, depth-1)}}
		default:
			return &filter.Filter{Not: randomFilter(rng, depth-1)}
		}
	}
	switch rng.IntN(5) {
	case 0:
		return &filter.Filter{Field: "team", Eq: teams[rng.IntN(3)]}
	case 1:
		return &filter.Filter{Field: "team", In: []any{teams[rng.IntN(3)], teams[rng.IntN(3)]}}
	case 2:
		return &filter.Filter{Field: "year", Gte: float64(2015 + rng.IntN(6)), Lt: float64(2020 + rng.IntN(6))}
	case 3:
		return &filter.Filter{Field: "acl", Exists: ptrTo(rng.IntN(2) == 0)}
	}
	var gs []string
	for _, g := range groups {
		if rng.IntN(2) == 0 {
			gs = append(gs, g)
		}
	}
	return filter.ACL("acl", gs)
}

func ptrTo[T any](v T) *T { return &v }

// hashEmbedder is a text embedder that depends on nothing but the text:
// each analysed term adds a fixed pseudo-random vector (seeded by the
// term), so two indexes of different corpora embed alike, as a
// bi-encoder would, and queries (and KG relation names) embed too.
type hashEmbedder struct{}

func (hashEmbedder) Name() string { return "test-hash" }
func (hashEmbedder) Dim() int     { return 8 }
func (hashEmbedder) Embed(_ context.Context, texts []string) ([]float32, error) {
	out := make([]float32, 0, 8*len(texts))
	for _, t := range texts {
		v := make([]float32, 8)
		for _, w := range lexical.Analyze(t) {
			h := fnv.New64a()
			h.Write([]byte(w))
			rng := rand.New(rand.NewPCG(h.Sum64(), 1))
			for i := range v {
				v[i] += float32(rng.NormFloat64())
			}
		}
		out = append(out, v...)
	}
	return out, nil
}

// queries are c's questions.
func queries(c *corpus.Corpus) []retrieve.Query {
	var qs []retrieve.Query
	for _, q := range c.Queries {
		qs = append(qs, retrieve.Query{ID: q.ID, Text: q.Text})
	}
	return qs
}

// reduced is c without the nodes outside allow and the edges touching
// them, in c's order.
func reduced(c *corpus.Corpus, allow *filter.Set, ix *index.Index) *corpus.Corpus {
	keep := map[string]bool{}
	out := &corpus.Corpus{}
	for _, n := range c.Nodes {
		i, _ := ix.Lookup(n.ID)
		if allow.Has(int(i)) {
			keep[n.ID] = true
			out.Nodes = append(out.Nodes, n)
		}
	}
	for _, e := range c.Edges {
		if keep[e.Src] && keep[e.Dst] {
			out.Edges = append(out.Edges, e)
		}
	}
	return out
}

// buildEmbedded indexes c with the hash embedder and opens it. With head
// nil it trains a small head; otherwise it stores that one, so a reduced
// index reranks with the full index's head (nothing it holds is then
// fitted on its own corpus).
func buildEmbedded(t *testing.T, c *corpus.Corpus, dir, name string, head *index.HeadFile) *index.Index {
	t.Helper()
	idir := filepath.Join(dir, name)
	headOpt := index.WithHead(testindex.SmallHead())
	if head != nil {
		headOpt = index.WithoutHead()
	}
	if err := index.Build(context.Background(), c, idir, index.WithTextEmbedder(hashEmbedder{}), headOpt); err != nil {
		t.Fatal(err)
	}
	if head != nil {
		if _, err := index.SetHead(context.Background(), idir, head); err != nil {
			t.Fatal(err)
		}
	}
	ix, err := index.OpenWithEmbedder(idir, hashEmbedder{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// trainSeeder trains a tiny SeedER encoder on the full index's first
// questions; the full index and the reduced ones all get it as it is (the
// reduced ones are trained on nothing of their own).
func trainSeeder(t *testing.T, ix *index.Index, c *corpus.Corpus) *seeder.File {
	t.Helper()
	so := testindex.TinySeeder()
	so.Train.Epochs = 1
	f, err := seeder.Train(context.Background(), ix, testindex.Env(), seeder.DefaultKGOptions(), so, c.Queries[:10], c.Queries[10:14])
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// withTriGraph builds the Tri-Graph of the index ix was opened from and
// reopens it. Its NER finds prose names and c's titles: each index's own,
// as a build does, so a hidden node's title found in an allowed passage
// must not stay an entity under a filter.
func withTriGraph(t *testing.T, ix *index.Index, c *corpus.Corpus) *index.Index {
	t.Helper()
	var titles []string
	for _, n := range c.Nodes {
		titles = append(titles, n.Title)
	}
	ex, err := ner.New("prose", titles)
	if err != nil {
		t.Fatal(err)
	}
	o := trigraph.DefaultBuildOptions()
	o.Backend, o.Extractor = cpu.New(), ex
	if _, err := trigraph.Set(context.Background(), ix.Dir, hashEmbedder{}, o); err != nil {
		t.Fatal(err)
	}
	out, err := index.OpenWithEmbedder(ix.Dir, hashEmbedder{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	return out
}

// withSeeder stores the encoder f in the index ix was opened from and
// reopens it.
func withSeeder(t *testing.T, ix *index.Index, f *seeder.File) *index.Index {
	t.Helper()
	dir := ix.Dir
	if err := seeder.Set(context.Background(), dir, f); err != nil {
		t.Fatal(err)
	}
	out, err := index.OpenWithEmbedder(dir, hashEmbedder{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	return out
}
