package retrieve_test

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

// Vector search over an index with nodes deleted in place equals it over
// the index compacted, also when the deleted nodes fill a query's top
// (the scan deepens past its first 2k+16), k passes the live nodes, and
// a batch mixes an empty query, plain ones and a filtered one.
func TestVectorOverDeletedNodes(t *testing.T) {
	ctx := context.Background()
	base, qs := openIndex(t)
	vb, err := retrieve.NewNamed("vector", base, env())
	if err != nil {
		t.Fatal(err)
	}
	// Queries by vector: their embedding cannot lose words with the
	// deleted passages (a word only those held loses its LSA row).
	near := retrieve.Query{ID: "near", Vector: slices.Clone(base.Vector(7))}
	top, err := vb.Retrieve(ctx, near, 40)
	if err != nil {
		t.Fatal(err)
	}
	ch := &index.Change{Tombstone: true}
	for _, h := range top[:30] { // the first query's top 30: more than 2·10+16 − 10
		ch.Remove = append(ch.Remove, h.Index)
	}
	slices.Sort(ch.Remove)
	tomb, err := base.Apply(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	compact, err := tomb.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vt, err := retrieve.NewNamed("vector", tomb, env())
	if err != nil {
		t.Fatal(err)
	}
	vc, err := retrieve.NewNamed("vector", compact, env())
	if err != nil {
		t.Fatal(err)
	}
	batch := []retrieve.Query{near, {Text: "zzqx unknownword"}, qs[1], {ID: "far", Vector: slices.Clone(base.Vector(11))}}
	tb, cb := slices.Clone(batch), slices.Clone(batch)
	var tnodes, cnodes []int32
	for v := range int32(tomb.N()) {
		if v%3 == 0 { // deleted ones too: Visible drops them
			tnodes = append(tnodes, v)
			if c, ok := compact.Lookup(tomb.NodeID(int(v))); ok && !tomb.IsDeleted(int(v)) {
				cnodes = append(cnodes, c)
			}
		}
	}
	tb[3].Allow, cb[3].Allow = filter.NewSet(tomb.N(), tnodes...), filter.NewSet(compact.N(), cnodes...)
	for _, k := range []int{10, compact.N() + 5, 1<<62 - 8} {
		got, err := vt.(retrieve.BatchMethod).RetrieveBatch(ctx, tb[:3], k)
		if err != nil {
			t.Fatal(err)
		}
		want, err := vc.(retrieve.BatchMethod).RetrieveBatch(ctx, cb[:3], k)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if g, w := idsOf(tomb, got[i]), idsOf(compact, want[i]); !reflect.DeepEqual(g, w) || !sameScores(got[i], want[i]) {
				t.Fatalf("k %d, query %d: %d hits in place, %d compacted (or other scores)", k, i, len(g), len(w))
			}
		}
		if len(want[0]) != min(k, compact.N()) {
			t.Fatalf("k %d: the query by vector found %d", k, len(want[0]))
		}
	}
	// A filtered query in the batch: every query ranked on its own.
	got, err := vt.(retrieve.BatchMethod).RetrieveBatch(ctx, tb, 10)
	if err != nil {
		t.Fatal(err)
	}
	want, err := vc.(retrieve.BatchMethod).RetrieveBatch(ctx, cb, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		g, w := idsOf(tomb, got[i]), idsOf(compact, want[i])
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("filtered batch, query %d: %v in place, %v compacted", i, g, w)
		}
		if i == 3 && len(w) == 0 {
			t.Fatal("the filtered query found nothing: the test would not test it")
		}
	}
	// A set smaller than the index anywhere in the batch is refused.
	tb[3].Allow = filter.NewSet(tomb.N() - 70)
	if _, err := vt.(retrieve.BatchMethod).RetrieveBatch(ctx, tb, 10); err == nil {
		t.Fatal("a filter over another index's size was taken")
	}
}

func idsOf(ix *index.Index, hits []retrieve.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, ix.NodeID(int(h.Index)))
	}
	return out
}

func sameScores(a, b []retrieve.Hit) bool {
	return slices.EqualFunc(a, b, func(x, y retrieve.Hit) bool { return x.Score == y.Score })
}
