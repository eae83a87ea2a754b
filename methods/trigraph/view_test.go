package trigraph

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/indextest"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/models/ner"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

// TestViewDropsHiddenTitles: with a title gazetteer, a hidden node's
// title mentioned in an allowed passage was an entity of the whole
// Tri-Graph; a view drops it (as a build over the allowed nodes, whose
// gazetteer lacks the title, would not find it). Every view entity is then
// an allowed node's title and an entity of that build. The build may hold
// more: a shorter allowed title inside a hidden longer one, which the
// whole gazetteer's longest match hid (the documented difference).
func TestViewDropsHiddenTitles(t *testing.T) {
	c := synth.Generate(synth.Options{People: 40, Cities: 8, Countries: 3, Bands: 12, Queries: 5, Seed: 1})
	build := func(c *corpus.Corpus, name string) *TriGraph {
		dir := filepath.Join(t.TempDir(), name)
		if err := index.Build(context.Background(), c, dir, index.WithoutHead()); err != nil {
			t.Fatal(err)
		}
		ix := indextest.Open(t, dir)
		o := DefaultBuildOptions()
		o.Backend, o.Extractor = cpu.New(), ner.NewGazetteer(ix.Names(), ner.DefaultMinTitleLen)
		tg, err := Build(context.Background(), ix, o)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	full := build(c, "full")
	var keep []int32
	red := &corpus.Corpus{}
	allowed, hidden := map[string]bool{}, map[string]bool{}
	for i, n := range c.Nodes {
		if i%3 == 0 {
			hidden[n.Title] = true
			continue
		}
		keep = append(keep, int32(i))
		red.Nodes = append(red.Nodes, n)
		allowed[n.Title] = true
	}
	rebuilt := build(red, "reduced")
	v, err := newView(full, filter.NewSet(len(c.Nodes), keep...), func(s string) bool { return allowed[s] }, len(full.EntityVecs)/len(full.Entities), cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range v.tg.Entities {
		if !allowed[e] || !slices.Contains(rebuilt.Entities, e) {
			t.Errorf("view entity %q: an allowed title %v, an entity of the rebuild %v", e, allowed[e], slices.Contains(rebuilt.Entities, e))
		}
	}
	for _, e := range rebuilt.Entities {
		if !slices.Contains(v.tg.Entities, e) && !shadowed(e, hidden) {
			t.Errorf("the rebuild's entity %q is missing from the view and no hidden title holds it", e)
		}
	}
	// Entities an allowed passage mentions only as a hidden node's title:
	// the title rule alone removes them.
	dropped := 0
	for e, name := range full.Entities {
		inAllowed := false
		for _, p := range keep {
			inAllowed = inAllowed || slices.Contains(full.PassEnts.Neighbors(int(p)), int32(e))
		}
		if inAllowed && hidden[name] && !allowed[name] && !slices.Contains(v.tg.Entities, name) {
			dropped++
		}
	}
	if dropped == 0 {
		t.Fatal("the test shows nothing: no allowed passage mentions a hidden title")
	}
}

// shadowed reports whether e lies inside a longer hidden title.
func shadowed(e string, hidden map[string]bool) bool {
	for h := range hidden {
		if h != e && strings.Contains(h, e) {
			return true
		}
	}
	return false
}
