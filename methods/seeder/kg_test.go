package seeder_test

import (
	"context"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/indextest"
	"github.com/gleaner-rag/gleaner/methods/internal/testindex"
	"github.com/gleaner-rag/gleaner/models/lexical"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func kgIndex(t *testing.T) *index.Index {
	t.Helper()
	node := func(id, title string, aliases ...string) corpus.Node {
		return corpus.Node{ID: id, Title: title, Text: title, Type: "entity", Aliases: aliases}
	}
	c := &corpus.Corpus{
		Nodes: []corpus.Node{node("ann", "Ann Lee", "ann_lee"), node("lee", "Lee"), node("paris", "Paris"), node("france", "France"),
			node("the", "The Who"), node("it", "It"), node("rome", "Rome"), node("italy", "Italy"), node("bob", "Bob Ray")},
		Edges: []corpus.Edge{{Src: "ann", Dst: "paris", Rel: "lives_in", Kind: "kg"}, {Src: "paris", Dst: "france", Rel: "country", Kind: "kg"},
			{Src: "bob", Dst: "rome", Rel: "lives_in", Kind: "kg"}, {Src: "rome", Dst: "italy", Rel: "country", Kind: "kg"},
			{Src: "ann", Dst: "italy", Kind: "other"}},
	}
	lsa := lexical.DefaultLSA()
	lsa.Dims, lsa.MinDF, lsa.MaxDFRatio = 4, 1, 1
	ix := indextest.Open(t, indextest.Build(t, c, index.WithLSA(lsa)))
	return ix
}

// TestKGSeedsAndKHop: the question's entity is the first seed; kg-khop's candidates reach the country two hops away and leave
// the linked seed out.
func TestKGSeedsAndKHop(t *testing.T) {
	ix := kgIndex(t)
	name := func(hits []int32) []string {
		var out []string
		for _, h := range hits {
			out = append(out, ix.NodeID(int(h)))
		}
		return out
	}
	q := retrieve.Query{Text: "Which country is it where ANN-LEE lives?"}
	m, _ := retrieve.NewNamed("kg-seeds", ix, testindex.Env())
	hits, err := m.Retrieve(context.Background(), q, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []int32
	for _, h := range hits {
		got = append(got, h.Index)
	}
	if n := name(got); n[0] != "ann" || len(n) != 3 {
		t.Fatalf("seeds %v", n)
	}
	// not the "other" edge to Italy
	kh := testindex.Method(t, ix, "kg-khop", "graph-kind", "kg", "k0", "1", "khop-quotas", "1,1")
	hits, err = kh.Retrieve(context.Background(), q, 10)
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, h := range hits {
		got = append(got, h.Index)
	}
	if n := name(got); !slices.Contains(n, "paris") || !slices.Contains(n, "france") || slices.Contains(n, "ann") || slices.Contains(n, "rome") || slices.Contains(n, "italy") {
		t.Fatalf("k-hop candidates %v", n)
	}
	if _, err := testindex.NewMethod(ix, "kg-khop", "k0", "0"); err == nil {
		t.Fatal("k0 = 0 accepted")
	}
}
