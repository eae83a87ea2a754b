package retrieve

import (
	"context"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/indextest"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

// TestVisible checks the live set Visible gives an index with deleted
// nodes, its narrowing of a filter (kept on the filter, and a fixed
// point), and that one index's live set is no isolated set for another
// index of the same size.
func TestVisible(t *testing.T) {
	ctx := context.Background()
	c := synth.Generate(synth.Options{People: 20, Cities: 4, Countries: 2, Bands: 4, Queries: 1})
	base := indextest.Open(t, indextest.Build(t, c))
	if q := Visible(base, Query{Text: "x"}); q.Allow != nil {
		t.Fatal("an index without deleted nodes got a filter")
	}
	ix, err := base.Apply(ctx, &index.Change{Remove: []int32{1, 5}, Tombstone: true})
	if err != nil {
		t.Fatal(err)
	}
	live := Visible(ix, Query{}).Allow
	if !live.Isolated() || live.Len() != ix.N()-2 || live.Has(1) || live.Has(5) || !live.Has(0) {
		t.Fatalf("live set: isolated %v, %d nodes", live.Isolated(), live.Len())
	}
	if again := Visible(ix, Query{Allow: live}).Allow; again != live {
		t.Fatal("the live set narrowed again is another set")
	}
	user := filter.NewSet(ix.N(), 0, 1, 2)
	nw := Visible(ix, Query{Allow: user}).Allow
	if nw.Len() != 2 || nw.Has(1) || nw.Isolated() {
		t.Fatalf("narrowed filter: %d nodes, has 1 %v, isolated %v", nw.Len(), nw.Has(1), nw.Isolated())
	}
	if Visible(ix, Query{Allow: user}).Allow != nw || Visible(ix, Query{Allow: nw}).Allow != nw {
		t.Fatal("a narrowing is not kept, or narrowing it again makes another set")
	}
	// ix's live set on base (the same size, nothing deleted): its nodes,
	// but not isolated, so that walks over base's graph take the induced view.
	other := Visible(base, Query{Allow: live}).Allow
	if other.Isolated() || other.Len() != live.Len() {
		t.Fatalf("another index's live set: isolated %v, %d nodes", other.Isolated(), other.Len())
	}
	if adj := base.View(); AllowedView(adj, Query{Allow: other}) == adj {
		t.Fatal("AllowedView trusted another index's live set")
	}
}
