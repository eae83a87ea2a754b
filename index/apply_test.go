package index_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/indextest"
)

// mirror is the corpus a sequence of changes leaves, kept the way Apply
// documents it: kept nodes in order, then added ones; edges from a
// removed node go, edges into one follow an added node of its id.
type mirror struct {
	nodes []corpus.Node
	edges []corpus.Edge
}

func (m *mirror) apply(remove map[string]bool, add []corpus.Node, edges []corpus.Edge) {
	var kept []corpus.Node
	for _, n := range m.nodes {
		if !remove[n.ID] {
			kept = append(kept, n)
		}
	}
	m.nodes = append(kept, add...)
	have := map[string]bool{}
	for _, n := range m.nodes {
		have[n.ID] = true
	}
	var es []corpus.Edge
	for _, e := range m.edges {
		if !remove[e.Src] && have[e.Dst] {
			es = append(es, e)
		}
	}
	m.edges = append(es, edges...)
}

// randomChange removes a few nodes (sometimes re-adding one under the same
// id, a replace) and adds new ones with edges.
func randomChange(rng *rand.Rand, ix *index.Index, step int) (*index.Change, map[string]bool) {
	ch := &index.Change{}
	remove := map[string]bool{}
	for k := rng.IntN(6); k > 0; k-- {
		v := int32(rng.IntN(ix.N()))
		if id := ix.NodeID(int(v)); !remove[id] {
			remove[id] = true
			ch.Remove = append(ch.Remove, v)
		}
	}
	var ids []string
	for id := range remove {
		if rng.IntN(2) == 0 {
			ids = append(ids, id) // replaced
		}
	}
	slices.Sort(ids)
	for k := rng.IntN(5); k > 0; k-- {
		ids = append(ids, fmt.Sprintf("new-%d-%d", step, k))
	}
	for _, id := range ids {
		words := strings.Fields(ix.Text(rng.IntN(ix.N())))
		rng.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
		text := strings.Join(words[:len(words)/2], " ") + fmt.Sprintf(" novelword%d", rng.IntN(50))
		ch.Add = append(ch.Add, corpus.Node{ID: id, Title: "Title " + id, Text: text})
	}
	for _, n := range ch.Add {
		for k := rng.IntN(3); k > 0; k-- {
			dst := ix.NodeID(rng.IntN(ix.N()))
			if remove[dst] && !slices.Contains(ids, dst) {
				continue
			}
			ch.Edges = append(ch.Edges, corpus.Edge{Src: n.ID, Dst: dst, Weight: 1, Kind: "mentions"})
		}
	}
	return ch, remove
}

// TestApplyEqualsBuild applies random changes and compares the result
// with a build of the final corpus: node store, postings, BM25 rankings
// and scores, and edges equal; added vectors are the fitted model's.
func TestApplyEqualsBuild(t *testing.T) {
	ctx := context.Background()
	c := synth.Generate(synth.Options{People: 80, Cities: 20, Countries: 6, Bands: 25, Queries: 10})
	ix := indextest.Open(t, indextest.Build(t, c))
	m := &mirror{nodes: slices.Clone(c.Nodes), edges: slices.Clone(c.Edges)}
	rng := rand.New(rand.NewPCG(3, 5))
	cur := ix
	for step := range 40 {
		ch, remove := randomChange(rng, cur, step)
		next, err := cur.Apply(ctx, ch)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		checkAddedVectors(t, cur, next, ch)
		m.apply(remove, ch.Add, ch.Edges)
		cur = next
	}
	dir := filepath.Join(t.TempDir(), "applied")
	if _, err := cur.WriteTo(ctx, dir, &index.LiveState{Log: "test", Seq: 40}, ""); err != nil {
		t.Fatal(err)
	}
	back := indextest.Open(t, dir)
	want := indextest.Open(t, indextest.Build(t, &corpus.Corpus{Nodes: m.nodes, Edges: m.edges}))
	for _, got := range []*index.Index{cur, back} {
		compareIndexes(t, got, want)
	}
	if back.Meta.Live == nil || back.Meta.Live.Seq != 40 {
		t.Errorf("written index's live state %+v, want seq 40", back.Meta.Live)
	}
}

// checkAddedVectors checks that kept rows are unchanged and added rows are
// the index's embedding of their text.
func checkAddedVectors(t *testing.T, old, next *index.Index, ch *index.Change) {
	t.Helper()
	for i, n := range ch.Add {
		v := int(next.N() - len(ch.Add) + i)
		want, err := next.Embedder.Embed(context.Background(), []string{index.IndexText(&n)})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(next.Vector(v), want) {
			t.Fatalf("added node %q: vector is not the embedding of its text", n.ID)
		}
	}
	if id := old.NodeID(0); !slices.Contains(ch.Remove, 0) {
		v, _ := next.Lookup(id)
		if !reflect.DeepEqual(next.Vector(int(v)), old.Vector(0)) {
			t.Fatalf("kept node %q: vector changed", id)
		}
	}
}

func compareIndexes(t *testing.T, got, want *index.Index) {
	t.Helper()
	if got.N() != want.N() || got.Meta.Terms != want.Meta.Terms || got.Meta.Postings != want.Meta.Postings || got.Meta.Edges != want.Meta.Edges {
		t.Fatalf("sizes: got %d nodes %d terms %d postings %d edges, want %d %d %d %d", got.N(), got.Meta.Terms, got.Meta.Postings, got.Meta.Edges,
			want.N(), want.Meta.Terms, want.Meta.Postings, want.Meta.Edges)
	}
	for i := range want.N() {
		if got.NodeID(i) != want.NodeID(i) || got.Title(i) != want.Title(i) || got.Text(i) != want.Text(i) || got.Document(i) != want.Document(i) {
			t.Fatalf("node %d: got %q, want %q", i, got.NodeID(i), want.NodeID(i))
		}
	}
	compareLookups(t, got, want)
	if !reflect.DeepEqual(got.Postings.Flat(), want.Postings.Flat()) {
		t.Fatal("postings differ from a build of the final corpus")
	}
	for i := 0; i < want.N(); i += 7 {
		q := want.Text(i)
		if g, w := got.BM25.Search(q, 10), want.BM25.Search(q, 10); !reflect.DeepEqual(g, w) {
			t.Fatalf("bm25 for node %d's text: got %v, want %v", i, g, w)
		}
	}
	if g, w := edgeList(t, got), edgeList(t, want); !reflect.DeepEqual(g, w) {
		t.Fatalf("edges differ: %d vs %d", len(g), len(w))
	}
}

// edgeList lists the graph's edges as sorted strings over node ids, read
// row by row (EachOut: from the blocks a live change leaves) and checked
// against the flat graph.
func edgeList(t *testing.T, ix *index.Index) []string {
	t.Helper()
	edge := func(u int, dst int32, w float32, r int32) string {
		kind, rel := ix.RelationName(r)
		return fmt.Sprintf("%s %s %s/%s %g", ix.NodeID(u), ix.NodeID(int(dst)), kind, rel, w)
	}
	var rows, flat []string
	for u := range ix.N() {
		ix.EachOut(u, func(dst int32, w float32, r int32) { rows = append(rows, edge(u, dst, w, r)) })
	}
	g := &ix.Graph().Out
	for u := range ix.N() {
		for p := g.Ptr[u]; p < g.Ptr[u+1]; p++ {
			flat = append(flat, edge(u, g.Idx[p], g.W[p], g.Rel[p]))
		}
	}
	if !slices.Equal(rows, flat) {
		t.Fatalf("the graph's rows (%d edges) differ from its flat form (%d)", len(rows), len(flat))
	}
	slices.Sort(flat)
	return flat
}

// TestApplyMarksDerivedStale checks that kinds gleaner derived from the
// whole index, and sections to be rebuilt, go stale on a change.
func TestApplyMarksDerivedStale(t *testing.T) {
	ctx := context.Background()
	c := synth.Generate(synth.Options{People: 30, Cities: 8, Countries: 3, Bands: 8, Queries: 4})
	dir := indextest.Build(t, c)
	if err := index.SetGraph(ctx, dir, "knn", []graphops.Edge{{Src: 0, Dst: 1, W: 1}}); err != nil {
		t.Fatal(err)
	}
	ix := indextest.Open(t, dir)
	same, err := ix.Apply(ctx, &index.Change{})
	if err != nil || same.Meta.Stale != nil {
		t.Fatalf("an empty change: stale %+v, err %v", same.Meta.Stale, err)
	}
	next, err := ix.Apply(ctx, &index.Change{Add: []corpus.Node{{ID: "x", Text: "a new passage"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !next.Meta.StaleKind("knn") || next.Meta.StaleKind("mentions") {
		t.Fatalf("stale %+v: want knn (derived) and not mentions (the corpus's)", next.Meta.Stale)
	}
}

// Plain edges (no kind, no relation) are the corpus's own: a change never
// marks them stale, and a stale mark an older version left on them is
// dropped by the next change.
func TestApplyKeepsPlainEdgesFresh(t *testing.T) {
	ctx := context.Background()
	c := synth.Generate(synth.Options{People: 20, Cities: 5, Countries: 2, Bands: 5, Queries: 2})
	ix := indextest.Open(t, indextest.Build(t, c))
	a, err := ix.Apply(ctx, &index.Change{Add: []corpus.Node{{ID: "p1", Text: "plain"}}, Edges: []corpus.Edge{{Src: "p1", Dst: ix.NodeID(0), Weight: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	a.Meta.Stale = &index.Stale{GraphKinds: []string{""}, Changes: 1} // as an older version left it
	b, err := a.Apply(ctx, &index.Change{Add: []corpus.Node{{ID: "p2", Text: "plain again"}}, Edges: []corpus.Edge{{Src: "p2", Dst: "p1", Weight: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if b.DerivedKind("") || b.Meta.StaleKind("") {
		t.Fatalf("plain edges: derived %v, stale %+v", b.DerivedKind(""), b.Meta.Stale)
	}
}

// TestApplyRefusesBadChanges checks the change's validation.
func TestApplyRefusesBadChanges(t *testing.T) {
	c := synth.Generate(synth.Options{People: 20, Cities: 5, Countries: 2, Bands: 5, Queries: 2})
	ix := indextest.Open(t, indextest.Build(t, c))
	id0 := ix.NodeID(0)
	for name, ch := range map[string]*index.Change{
		"remove out of range": {Remove: []int32{int32(ix.N())}},
		"remove twice":        {Remove: []int32{1, 1}},
		"add existing id":     {Add: []corpus.Node{{ID: id0, Text: "x"}}},
		"add twice":           {Add: []corpus.Node{{ID: "a", Text: "x"}, {ID: "a", Text: "y"}}},
		"empty id":            {Add: []corpus.Node{{ID: " ", Text: "x"}}},
		"empty text":          {Add: []corpus.Node{{ID: "b"}}},
		"edge to nothing":     {Add: []corpus.Node{{ID: "c", Text: "x"}}, Edges: []corpus.Edge{{Src: "c", Dst: "nowhere"}}},
		"edge to removed":     {Remove: []int32{0}, Edges: []corpus.Edge{{Src: ix.NodeID(1), Dst: id0}}},
		"vectors wrong size":  {Add: []corpus.Node{{ID: "d", Text: "x"}}, Vectors: []float32{1}},
	} {
		if _, err := ix.Apply(context.Background(), ch); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := ix.Apply(context.Background(), &index.Change{Remove: []int32{0}, Add: []corpus.Node{{ID: id0, Text: "replaced"}}}); err != nil {
		t.Errorf("replacing %q: %v", id0, err)
	}
}

// TestApplyTwiceFromOneIndex applies two add-only changes to the same
// index: the first may append in place, the second must not overwrite it.
func TestApplyTwiceFromOneIndex(t *testing.T) {
	ctx := context.Background()
	c := synth.Generate(synth.Options{People: 20, Cities: 5, Countries: 2, Bands: 5, Queries: 2})
	ix := indextest.Open(t, indextest.Build(t, c))
	base, err := ix.Apply(ctx, &index.Change{Add: []corpus.Node{{ID: "base", Text: "a heap copy to append to"}}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := base.Apply(ctx, &index.Change{Add: []corpus.Node{{ID: "a", Title: "A", Text: "first child passage"}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := base.Apply(ctx, &index.Change{Add: []corpus.Node{{ID: "b", Title: "B", Text: "second child, longer passage text"}}})
	if err != nil {
		t.Fatal(err)
	}
	last := a.N() - 1
	if a.NodeID(last) != "a" || a.Text(last) != "first child passage" || b.NodeID(last) != "b" || base.N() != last {
		t.Fatalf("children: %q %q / %q; base has %d", a.NodeID(last), a.Text(last), b.NodeID(last), base.N())
	}
	if !reflect.DeepEqual(a.Vector(last), mustEmbed(t, a, "A\nfirst child passage")) {
		t.Fatal("the first child's vector was overwritten")
	}
}

func mustEmbed(t *testing.T, ix *index.Index, text string) []float32 {
	t.Helper()
	v, err := ix.Embedder.Embed(context.Background(), []string{text})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// compareLookups checks got's id table and document counts against want's.
func compareLookups(t *testing.T, got, want *index.Index) {
	t.Helper()
	for i := range want.N() {
		id, doc := want.NodeID(i), want.Document(i)
		if v, ok := got.Lookup(id); !ok || int(v) != i {
			t.Fatalf("Lookup(%q) = %d, %v; want %d", id, v, ok, i)
		}
		if g, w := got.DocumentSize(doc), want.DocumentSize(doc); g != w || got.IsDocument(doc) != want.IsDocument(doc) {
			t.Fatalf("document %q: %d passages (document %v), want %d (%v)", doc, g, got.IsDocument(doc), w, want.IsDocument(doc))
		}
	}
	if _, ok := got.Lookup("no such node"); ok {
		t.Fatal("Lookup found an id the index lacks")
	}
}

// TestAppendChainKeepsLookups appends passages of new and old documents
// step by step, past the point where the shared id table is rebuilt,
// and checks ids and document sizes against a build at every step.
func TestAppendChainKeepsLookups(t *testing.T) {
	ctx := context.Background()
	c := synth.Generate(synth.Options{People: 30, Cities: 6, Countries: 2, Bands: 6, Queries: 2})
	cur := indextest.Open(t, indextest.Build(t, c))
	first := cur
	nodes := slices.Clone(c.Nodes)
	for step := range 12 {
		if step%3 == 2 {
			cur.Postings.Flat() // as a checkpoint does: the next change starts from the flat form
		}
		var add []corpus.Node
		for k := range 3 {
			doc := fmt.Sprintf("doc-%d", (step+k)%5)
			add = append(add, corpus.Node{ID: fmt.Sprintf("%s#%d-%d", doc, step, k), Doc: doc, Title: "Doc " + doc, Text: fmt.Sprintf("passage %d of step %d about %s", k, step, doc)})
		}
		next, err := cur.Apply(ctx, &index.Change{Add: add})
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		nodes = append(nodes, add...)
		compareIndexes(t, next, indextest.Open(t, indextest.Build(t, &corpus.Corpus{Nodes: slices.Clone(nodes), Edges: c.Edges})))
		for i := range add {
			// the basis is the first index's: a word's row must not move
			// as term ids change (segments, flattening, LSA.Remap)
			if want := mustEmbed(t, first, index.IndexText(&add[i])); !reflect.DeepEqual(next.Vector(next.N()-len(add)+i), want) {
				t.Fatalf("step %d: added node %q's vector differs from its embedding in the first index's basis", step, add[i].ID)
			}
		}
		if _, ok := cur.Lookup(add[0].ID); ok {
			t.Fatalf("step %d: the index applied from sees an id added after it", step)
		}
		cur = next
	}
}
