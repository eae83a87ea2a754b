package index

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/graphops"
)

func docCorpus() *corpus.Corpus {
	return &corpus.Corpus{Nodes: []corpus.Node{
		{ID: "a.md#1", Title: "Alpha", Text: "alpha ledger opens here", Doc: "a.md", Span: &corpus.Span{Start: 10, End: 40},
			Meta: map[string]any{"tags": []any{"x", "y"}, "rank": 2.0}},
		{ID: "a.md#2", Title: "Alpha > Setup > Deep", Text: "alpha ledger setup words", Doc: "a.md", Section: "Setup > Deep", Span: &corpus.Span{Start: 41, End: 90}},
		{ID: "b.md", Title: "Beta", Text: "beta ledger is whole"},
		{ID: "c", Text: "gamma delta"}, {ID: "d", Text: "gamma epsilon"}, {ID: "e", Text: "delta zeta"}, {ID: "f", Text: "zeta eta"},
	}}
}

func TestProvenanceRoundTrips(t *testing.T) {
	ix := build(t, docCorpus())
	if !ix.HasDocuments() {
		t.Fatal("provenance not stored")
	}
	for i, want := range []struct {
		doc, section, title string
		span                [2]int
		ok                  bool
	}{{"a.md", "", "Alpha", [2]int{10, 40}, true}, {"a.md", "Setup > Deep", "Alpha", [2]int{41, 90}, true}, {"b.md", "", "Beta", [2]int{}, false}} {
		s, e, ok := ix.Span(i)
		if ix.Document(i) != want.doc || ix.HeadingPath(i) != want.section || ix.DocumentTitle(i) != want.title || [2]int{s, e} != want.span || ok != want.ok {
			t.Fatalf("node %d: doc %q section %q title %q span %d,%d,%v; want %+v", i, ix.Document(i), ix.HeadingPath(i), ix.DocumentTitle(i), s, e, ok, want)
		}
	}
	meta, err := ix.NodeMeta(0)
	if err != nil || !reflect.DeepEqual(meta, map[string]any{"tags": []any{"x", "y"}, "rank": 2.0}) {
		t.Fatalf("meta %v %v", meta, err)
	}
	if m, err := ix.NodeMeta(2); m != nil || err != nil {
		t.Fatalf("node without meta: %v %v", m, err)
	}
	for id, want := range map[string]bool{"a.md": true, "b.md": true, "a.md#1": false, "c.md": false} {
		if ix.IsDocument(id) != want {
			t.Fatalf("IsDocument(%q) = %v", id, !want)
		}
	}
}

func TestProvenanceSurvivesRewrites(t *testing.T) {
	ix := build(t, docCorpus())
	dir := ix.Dir
	ix.Close()
	if err := SetGraph(context.Background(), dir, "links", []graphops.Edge{{Src: 1, Dst: 2, W: 1}}); err != nil {
		t.Fatal(err)
	}
	ix2 := open(t, dir)
	if ix2.Document(1) != "a.md" || ix2.HeadingPath(1) != "Setup > Deep" {
		t.Fatalf("provenance lost by a graph rewrite: %q %q", ix2.Document(1), ix2.HeadingPath(1))
	}
}

func TestPlainIndexHasNoProvenance(t *testing.T) {
	ix := build(t, smallCorpus())
	if ix.HasDocuments() || ix.r.Has(fNodeDoc) {
		t.Fatal("provenance files written for plain nodes")
	}
	if ix.Document(3) != ix.NodeID(3) || ix.DocumentTitle(3) != ix.Title(3) || !ix.IsDocument(ix.NodeID(3)) {
		t.Fatal("a plain node is not its own document")
	}
	if _, _, ok := ix.Span(3); ok {
		t.Fatal("span without provenance")
	}
}

func open(t *testing.T, dir string) *Index {
	t.Helper()
	ix, err := Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// A corpus smaller than a training group once made head training loop
// forever; now it is indexed without a head, with a warning.
func TestTinyCorpusIndexesWithoutAHead(t *testing.T) {
	for n := 1; n <= 8; n++ {
		c := &corpus.Corpus{}
		for i := range n {
			c.Nodes = append(c.Nodes, corpus.Node{ID: fmt.Sprint(i), Text: fmt.Sprintf("the ledger service number %d records every transfer. word%d and shared terms here", i, i%2)})
		}
		dir := filepath.Join(t.TempDir(), "ix")
		if err := Build(context.Background(), c, dir); err != nil {
			t.Fatalf("%d nodes: %v", n, err)
		}
	}
}
