package retrieve_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/index/indextest"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// docIndex holds documents d0…d4 cut into 3 passages each, ids "dJ#P",
// plus padding so LSA has terms to fit.
func docIndex(t *testing.T) string {
	c := &corpus.Corpus{}
	for d := range 5 {
		for p := range 3 {
			c.Nodes = append(c.Nodes, corpus.Node{ID: fmt.Sprintf("d%d#%d", d, p), Doc: fmt.Sprintf("d%d", d),
				Title: fmt.Sprintf("Doc %d", d), Text: fmt.Sprintf("word%d common%d shared", p, d%2)})
		}
	}
	return indextest.Build(t, c)
}

// ranked returns a fixed ranking, cut at k, and records each k asked.
type ranked struct {
	order []int32
	asked []int
}

func (r *ranked) Name() string { return "ranked" }
func (r *ranked) Retrieve(_ context.Context, _ retrieve.Query, k int) ([]retrieve.Hit, error) {
	r.asked = append(r.asked, k)
	var out []retrieve.Hit
	for i, n := range r.order[:min(k, len(r.order))] {
		out = append(out, retrieve.Hit{Index: n, Score: float32(100 - i)})
	}
	return out, nil
}

func TestGroupByDocumentEqualsHandGrouping(t *testing.T) {
	ix := indextest.Open(t, docIndex(t))
	// Nodes 3k..3k+2 are document k. The ranking visits d1 twice before d4.
	m := &ranked{order: []int32{4, 3, 13, 5, 0, 14, 7, 1, 10, 2}}
	got, err := retrieve.RetrieveDocuments(context.Background(), m, ix, retrieve.Query{Text: "x"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	// By hand: d1 (node 4, score 100), d4 (node 13, 98), d0 (node 0, 96).
	want := []retrieve.Hit{{Index: 4, Score: 100}, {Index: 13, Score: 98}, {Index: 0, Score: 96}}
	if !slices.Equal(got, want) {
		t.Fatalf("grouped %v, want %v", got, want)
	}
	if !slices.Equal(m.asked, []int{12}) {
		t.Fatalf("asked %v passages, want 4·k = 12 once", m.asked)
	}
}

func TestGroupByDocumentAsksDeeper(t *testing.T) {
	ix := indextest.Open(t, docIndex(t))
	// Three passages of d0 first: 4 documents need a deeper list.
	m := &ranked{order: []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}}
	got, err := retrieve.RetrieveDocuments(context.Background(), m, ix, retrieve.Query{Text: "x"}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[4].Index != 12 {
		t.Fatalf("grouped %v, want the first passage of each of the 5 documents", got)
	}
	if !slices.Equal(m.asked, []int{15}) { // 4·5 = 20, capped at the 15 nodes
		t.Fatalf("asked %v", m.asked)
	}
	short := &ranked{order: []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}
	if got, _ := retrieve.RetrieveDocuments(context.Background(), short, ix, retrieve.Query{Text: "x"}, 2); len(got) != 2 || !slices.Equal(short.asked, []int{8}) {
		t.Fatalf("k=2: %v asked %v", got, short.asked)
	}
	few := &ranked{order: []int32{0, 1, 2, 3, 4, 5, 6, 7}} // a method returning all it has, 3 docs
	got, _ = retrieve.RetrieveDocuments(context.Background(), few, ix, retrieve.Query{Text: "x"}, 4)
	if len(got) != 3 || !slices.Equal(few.asked, []int{15}) {
		t.Fatalf("short method: %v asked %v", got, few.asked)
	}
	if err := retrieve.CheckGroupBy("chapter"); err == nil {
		t.Fatal("a bad group-by accepted")
	}
}

func TestGroupByDocumentHugeK(t *testing.T) {
	ix := indextest.Open(t, docIndex(t))
	m := &ranked{order: []int32{0, 3, 6}}
	got, err := retrieve.RetrieveDocuments(context.Background(), m, ix, retrieve.Query{Text: "x"}, 1<<62)
	if err != nil || len(got) != 3 || !slices.Equal(m.asked, []int{15}) {
		t.Fatalf("k 2^62: %v %v, asked %v", got, err, m.asked)
	}
}
