package retrieve_test

import (
	"context"
	"testing"

	"github.com/gleaner-rag/gleaner/kernels"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func TestFastInsightStreamsAndCaches(t *testing.T) {
	ix, qs := openSynth(t)
	for _, c := range []struct {
		name string
		want int // encoder pairs for one query
	}{{"fastinsight", 100}, {"fastinsight-nocache", 550}} {
		m, err := retrieve.NewWith(c.name, ix, withKinds("mentions"))
		if err != nil {
			t.Fatal(err)
		}
		var sizes []int
		err = m.(retrieve.StreamingMethod).RetrieveStream(context.Background(), qs[0], 1000, func(h []kernels.Hit) bool {
			sizes = append(sizes, len(h))
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(sizes) != 10 || sizes[0] != 10 || sizes[9] != 100 {
			t.Fatalf("%s: emitted lists of %v, want 10, 20, …, 100", c.name, sizes)
		}
		if got := retrieve.EncodedPairs(m); got != c.want {
			t.Errorf("%s: %d encoder pairs for one query, want %d", c.name, got, c.want)
		}
		hits, err := m.Retrieve(context.Background(), qs[1], 10)
		if err != nil || len(hits) != 10 {
			t.Fatalf("%s: %v %v", c.name, hits, err)
		}
		seen := map[int32]bool{}
		for i, h := range hits {
			if seen[h.Index] || (i > 0 && h.Score > hits[i-1].Score) {
				t.Fatalf("%s: ranking %v has a duplicate or is out of order", c.name, hits)
			}
			seen[h.Index] = true
		}
		// stopping early is honoured
		n := 0
		m.(retrieve.StreamingMethod).RetrieveStream(context.Background(), qs[2], 10, func([]kernels.Hit) bool { n++; return n < 3 })
		if n != 3 {
			t.Errorf("%s: emit returned false at 3 but was called %d times", c.name, n)
		}
		retrieve.CloseAll(context.Background(), m)
	}
}

func TestGARScoresItsBudget(t *testing.T) {
	ix, qs := openSynth(t)
	m, err := retrieve.NewWith("gar", ix, func() retrieve.Options {
		o := withKinds("mentions")
		o.GAR = retrieve.GAROptions{Budget: 30, Batch: 10}
		return o
	}())
	if err != nil {
		t.Fatal(err)
	}
	defer retrieve.CloseAll(context.Background(), m)
	var lists int
	var last []kernels.Hit
	m.(retrieve.StreamingMethod).RetrieveStream(context.Background(), qs[0], 1000, func(h []kernels.Hit) bool { lists++; last = h; return true })
	if lists != 3 || retrieve.EncodedPairs(m) != 30 {
		t.Errorf("%d batches, %d pairs scored; want 3 and 30", lists, retrieve.EncodedPairs(m))
	}
	if len(last) != 30 {
		t.Errorf("final list has %d nodes, want 30 (budget = vector depth, backfilled)", len(last))
	}
}
