package fuserag

import (
	"context"
	"testing"

	"github.com/gleaner-rag/gleaner/methods/internal/testindex"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

// TestLazyRelevanceEqualsScoring: under the bm25 stage, unfiltered and
// under a filter, the walk's start nodes and rel(q, v), scored node by
// node, equal the first stage's full scoring for every node, float for
// float.
func TestLazyRelevanceEqualsScoring(t *testing.T) {
	ix, qs := testindex.Shared(t)
	o := DefaultOptions()
	o.GraphKinds = []string{"mentions"}
	em, err := New(ix, testindex.Env(), o)
	if err != nil {
		t.Fatal(err)
	}
	m := em.(*fuseRAG)
	ctx := context.Background()
	compared := 0
	var third []int32
	for v := range int32(ix.N()) {
		if v%3 != 1 {
			third = append(third, v)
		}
	}
	all := append(qs, retrieve.Query{Text: "zzqx no such words"})
	for _, q := range qs {
		q.Allow = filter.NewSet(ix.N(), third...)
		all = append(all, q)
	}
	for _, q := range all {
		start, rel, release, err := m.firstStage(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := m.st.Score(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if sc == nil {
			if len(start) != 0 {
				t.Errorf("%q: start %v, but nothing matches", q.Text, start)
			}
			continue
		}
		seeds := m.st.RankScored(sc, o.Start)
		if len(seeds) != len(start) {
			t.Fatalf("%q: start %v, first stage %v", q.Text, start, seeds)
		}
		for i, h := range seeds {
			if start[i] != h.Index {
				t.Fatalf("%q: start %v, first stage %v", q.Text, start, seeds)
			}
		}
		full := relevance(sc)
		for v := range int32(ix.N()) {
			if a, b := rel(v), full(v); a != b {
				t.Fatalf("%q: node %d: rel %v, full scoring %v", q.Text, v, a, b)
			}
			compared++
		}
		release()
		sc.Release()
	}
	if compared == 0 {
		t.Fatal("no query matched: the test compares nothing")
	}
}
