package ketrag

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/kernels/cpu"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/indextest"
	"github.com/gleaner-rag/gleaner/models/kgextract"
	"github.com/gleaner-rag/gleaner/models/ner"
)

func smallCorpus() *corpus.Corpus {
	return synth.Generate(synth.Options{People: 80, Cities: 20, Countries: 5, Bands: 20, Queries: 30, Seed: 3})
}

func buildIndex(t *testing.T, c *corpus.Corpus) *index.Index {
	t.Helper()
	return indextest.Open(t, indextest.Build(t, c))
}

func titlesOf(ix *index.Index) []string {
	var out []string
	for i := 0; i < ix.N(); i++ {
		out = append(out, ix.Title(i))
	}
	return out
}

func ketragOptions(t *testing.T, ix *index.Index) BuildOptions {
	t.Helper()
	ex, err := kgextract.NewLocal(ner.NewGazetteer(titlesOf(ix), ner.DefaultMinTitleLen))
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultBuildOptions()
	o.Backend = cpu.New()
	o.Extractor = ex
	o.UnitTokens, o.PieceTokens = 200, 60
	return o
}

// TestKETRAGRoundTrip builds KET-RAG's structures, checks their
// invariants, stores them, reopens the index and finds the same arrays.
func TestKETRAGRoundTrip(t *testing.T) {
	ix := buildIndex(t, smallCorpus())
	o := ketragOptions(t, ix)
	k, err := Build(context.Background(), ix, o)
	if err != nil {
		t.Fatal(err)
	}
	n := ix.N()
	if want := int(0.8 * float64(n)); len(k.Core) != want || !slices.IsSorted(k.Core) {
		t.Fatalf("core: %d chunks (sorted %v), want floor(0.8·%d) = %d", len(k.Core), slices.IsSorted(k.Core), n, want)
	}
	// The core holds the highest-PageRank chunks.
	in := map[int32]bool{}
	for _, c := range k.Core {
		in[c] = true
	}
	var minIn, maxOut float32 = math.MaxFloat32, 0
	for i, p := range k.PageRank {
		if in[int32(i)] {
			minIn = min(minIn, p)
		} else {
			maxOut = max(maxOut, p)
		}
	}
	if minIn < maxOut {
		t.Fatalf("a chunk outside the core outranks one inside: %v < %v", minIn, maxOut)
	}
	// Units merge consecutive core chunks up to UnitTokens; these nodes are
	// passages, not chunk pieces, so a one-token line break joins them.
	if k.Meta.Chunked {
		t.Fatal("passages taken for chunk pieces")
	}
	for u := 0; u+1 < len(k.UnitPtr); u++ {
		part := k.Core[k.UnitPtr[u]:k.UnitPtr[u+1]]
		tokens := len(part) - 1
		for _, c := range part {
			tokens += int(k.NodeTokens[c])
		}
		if tokens > o.UnitTokens && len(part) > 1 {
			t.Fatalf("unit %d holds %d tokens > %d", u, tokens, o.UnitTokens)
		}
		if u+2 < len(k.UnitPtr) && tokens+1+int(k.NodeTokens[k.Core[k.UnitPtr[u+1]]]) <= o.UnitTokens {
			t.Fatalf("unit %d stopped although the next chunk fits", u)
		}
	}
	for p := range k.PieceTokens {
		if k.PieceTokens[p] > int32(o.PieceTokens) || k.PieceTokens[p] < 1 {
			t.Fatalf("text unit %d: %d tokens", p, k.PieceTokens[p])
		}
	}
	if k.Meta.Entities == 0 || k.Meta.Relationships == 0 || k.Meta.Keywords == 0 {
		t.Fatalf("empty skeleton or keywords: %+v", k.Meta)
	}
	// Every relationship's ends exist; ranks count relationships.
	deg := make([]int32, k.EntityNames.Len())
	for r := range k.RelSrc {
		deg[k.RelSrc[r]]++
		deg[k.RelDst[r]]++
	}
	if !slices.Equal(deg, k.EntityRank) {
		t.Fatal("entity ranks are not relationship degrees")
	}
	// A keyword's chunks hold it.
	for w := 0; w < min(50, k.Keywords.Len()); w++ {
		for _, c := range k.KeywordChunks.Neighbors(w) {
			if !strings.Contains(ix.NodeText(int(c)), strings.Trim(k.Keywords.At(w), "`'")) {
				t.Fatalf("keyword %q is not in chunk %d", k.Keywords.At(w), c)
			}
		}
	}

	dir := ix.Dir
	ix.Close()
	if _, err := Set(context.Background(), dir, nil, o); err != nil {
		t.Fatal(err)
	}
	if err := index.SetGraph(context.Background(), dir, "extra", []graphops.Edge{{Src: 0, Dst: 1, W: 1}}); err != nil {
		t.Fatal(err)
	}
	got, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	g, err := Of(got)
	if err != nil {
		t.Fatal(err)
	}
	if g == nil || g.Meta.Entities != k.Meta.Entities || !slices.Equal(g.Core, k.Core) || !slices.Equal(g.KeywordVecs, k.KeywordVecs) ||
		g.EntityDescs.At(3) != k.EntityDescs.At(3) || !slices.Equal(g.RelPieces.Idx, k.RelPieces.Idx) || g.EntityRels.N() != k.Meta.Entities {
		t.Fatal("the reopened KET-RAG structures differ")
	}
}

func TestKETRAGUniformSelectionIsSeeded(t *testing.T) {
	ix := buildIndex(t, smallCorpus())
	o := ketragOptions(t, ix)
	o.Selection, o.Beta = SelectUniform, 0.2
	a, err := Build(context.Background(), ix, o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Build(context.Background(), ix, o)
	o.Seed++
	c, _ := Build(context.Background(), ix, o)
	if !slices.Equal(a.Core, b.Core) || slices.Equal(a.Core, c.Core) || len(a.Core) != int(0.2*float64(ix.N())) {
		t.Fatalf("uniform selection: %v / %v / %v", a.Core, b.Core, c.Core)
	}
}

func TestKETRAGOptionsValidate(t *testing.T) {
	ix := buildIndex(t, smallCorpus())
	good := ketragOptions(t, ix)
	for name, edit := range map[string]func(*BuildOptions){
		"beta0":     func(o *BuildOptions) { o.Beta = 0 },
		"beta>1":    func(o *BuildOptions) { o.Beta = 1.5 },
		"betaNaN":   func(o *BuildOptions) { o.Beta = math.NaN() },
		"selection": func(o *BuildOptions) { o.Selection = "random" },
		"damping":   func(o *BuildOptions) { o.Damping = 1 },
		"units":     func(o *BuildOptions) { o.UnitTokens = 0 },
		"pieces":    func(o *BuildOptions) { o.PieceTokens = -1 },
		"descs":     func(o *BuildOptions) { o.MaxDescriptions = 0 },
		"extractor": func(o *BuildOptions) { o.Extractor = nil },
		"workers":   func(o *BuildOptions) { o.Workers = 0 },
	} {
		o := good
		edit(&o)
		if _, err := Build(context.Background(), ix, o); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

func TestMergeSkeleton(t *testing.T) {
	gs := []kgextract.Graph{
		{Entities: []kgextract.Entity{{Name: "Ann Lee", Type: "PERSON", Description: "a"}, {Name: "Paris", Type: "GEO", Description: "p"}},
			Relationships: []kgextract.Relationship{{Source: "Ann Lee", Target: "Paris", Description: "r1", Weight: 2}}},
		{Entities: []kgextract.Entity{{Name: "ann lee.", Type: "PERSON", Description: "b"}, {Name: "ANN LEE", Type: "ORG", Description: "a"}},
			Relationships: []kgextract.Relationship{{Source: "ann lee", Target: "paris", Description: "r2", Weight: 3}, {Source: "Paris", Target: "Rome", Description: "r3", Weight: 1}}},
	}
	s := mergeSkeleton(gs, 2)
	if !slices.Equal(s.names, []string{"Ann Lee", "Paris", "Rome"}) || s.types[0] != "PERSON" || s.descs[0] != "a\nb" {
		t.Fatalf("entities %q %q %q", s.names, s.types, s.descs)
	}
	if len(s.src) != 2 || s.weight[0] != 5 || s.relDescs[0] != "r1\nr2" || !slices.Equal(s.relUnits[0], []int32{0, 1}) || s.types[2] != "" {
		t.Fatalf("relationships %v %v %v %q", s.src, s.dst, s.weight, s.relDescs)
	}
	// B→A merges into A→B: GraphRAG's graph is undirected.
	s = mergeSkeleton(append(gs, kgextract.Graph{Relationships: []kgextract.Relationship{{Source: "Paris", Target: "Ann Lee", Description: "r4", Weight: 1}}}), 3)
	if len(s.src) != 2 || s.weight[0] != 6 || s.src[0] != 0 || s.relDescs[0] != "r1\nr2\nr4" {
		t.Fatalf("relationships %v %v %v %q", s.src, s.dst, s.weight, s.relDescs)
	}
}

// TestKETRAGCosts: at the built β the cost model counts exactly the units
// extracted and their tokens; β = 1 covers every chunk.
func TestKETRAGCosts(t *testing.T) {
	ix := buildIndex(t, smallCorpus())
	o := ketragOptions(t, ix)
	k, err := Build(context.Background(), ix, o)
	if err != nil {
		t.Fatal(err)
	}
	rows := k.Costs([]float64{0.2, o.Beta, 1}, 500)
	built := rows[1]
	if built.Calls != k.Meta.Units || built.Core != k.Meta.Core || built.InputTokens != k.Meta.UnitTextTokens+k.Meta.Units*(500+ChatOverheadTokens) {
		t.Fatalf("cost at the built β %+v, meta %+v", built, k.Meta)
	}
	if built.OutputTokens != -1 {
		t.Fatalf("output tokens %d without an LLM's accounting", built.OutputTokens)
	}
	k.Meta.Usage = kgextract.Usage{Calls: 3, OutputTokens: 600, CacheHits: 1, CachedOutput: 200}
	if got := k.Costs([]float64{o.Beta}, 500)[0].OutputTokens; got != 800 {
		t.Fatalf("at the built β the measured output (800 tokens) comes back as %d", got)
	}
	all := 0
	for _, n := range k.NodeTokens {
		all += int(n)
	}
	// These nodes are passages, not chunk pieces: a line break joins them within a unit.
	if want := all + ix.N() - rows[2].Calls; rows[2].Core != ix.N() || rows[2].InputTokens-rows[2].Calls*(500+ChatOverheadTokens) != want || rows[0].Calls >= built.Calls {
		t.Fatalf("β = 1: %+v (all chunks hold %d tokens); β = 0.2: %+v", rows[2], all, rows[0])
	}
}

func TestUnitBounds(t *testing.T) {
	core, tokens := []int32{3, 4, 6}, make([]int32, 7)
	tokens[3], tokens[4], tokens[6] = 5, 5, 5
	// Pieces concatenate (KET-RAG's merge): 5 + 5 fit 10, and 15 fit 15.
	if got := unitBounds(core, tokens, 10, true, 1); !slices.Equal(got, []int64{0, 2, 3}) {
		t.Fatalf("chunked: %v", got)
	}
	if got := unitBounds(core, tokens, 15, true, 1); !slices.Equal(got, []int64{0, 3}) {
		t.Fatalf("chunked at 15: %v", got)
	}
	// Passages always need the break: 5 + 1 + 5 > 10.
	if got := unitBounds(core, tokens, 10, false, 1); !slices.Equal(got, []int64{0, 1, 2, 3}) {
		t.Fatalf("passages: %v", got)
	}
	if got := unitBounds(core, tokens, 11, false, 1); !slices.Equal(got, []int64{0, 2, 3}) {
		t.Fatalf("passages at 11: %v", got)
	}
}
