package fastinsight_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/gleaner-rag/gleaner/methods/fastinsight"
	"github.com/gleaner-rag/gleaner/methods/internal/testindex"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func TestMain(m *testing.M) { testindex.Main(m) }

func TestFastInsightStreamsAndCaches(t *testing.T) {
	ix, qs := testindex.Shared(t)
	for _, c := range []struct {
		name string
		want int // encoder pairs for one query
	}{{"fastinsight", 100}, {"fastinsight-nocache", 550}} {
		m := testindex.Method(t, ix, c.name, "graph-kind", "mentions")
		var sizes []int
		err := m.(retrieve.StreamingMethod).RetrieveStream(context.Background(), qs[0], 1000, func(h []retrieve.Hit) bool {
			sizes = append(sizes, len(h))
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(sizes) != 10 || sizes[0] != 10 || sizes[9] != 100 {
			t.Fatalf("%s: emitted lists of %v, want 10, 20, …, 100", c.name, sizes)
		}
		if got := m.(retrieve.PairCounter).EncodedPairs(); got != c.want {
			t.Errorf("%s: %d encoder pairs for one query, want %d", c.name, got, c.want)
		}
		if sm, ok := m.(retrieve.SchedulerReporter).SchedulerMetrics(); !ok || sm.Items != uint64(c.want) {
			t.Errorf("%s: scheduler metrics %+v (%v), want %d items", c.name, sm, ok, c.want)
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
		m.(retrieve.StreamingMethod).RetrieveStream(context.Background(), qs[2], 10, func([]retrieve.Hit) bool { n++; return n < 3 })
		if n != 3 {
			t.Errorf("%s: emit returned false at 3 but was called %d times", c.name, n)
		}
	}
}

// Alpha 0 and Beta 0 mean no smoothing and no structure term, exactly as
// the ablation variants, and differ from the defaults; the variants have
// no setting for what they fix.
func TestZeroOptionsAreHonoured(t *testing.T) {
	ix, qs := testindex.Shared(t)
	for _, c := range []struct{ variant, setting string }{{"fastinsight-alpha0", "alpha"}, {"fastinsight-beta0", "beta"}} {
		zero := testindex.Method(t, ix, "fastinsight", "graph-kind", "mentions", c.setting, "0")
		variant := testindex.Method(t, ix, c.variant, "graph-kind", "mentions")
		def := testindex.Method(t, ix, "fastinsight", "graph-kind", "mentions")
		differs := false
		for _, q := range qs[:20] {
			a, b := testindex.Ranking(t, zero, q, 100), testindex.Ranking(t, variant, q, 100)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s: option set to 0 ranks %v, the variant %v", c.variant, a, b)
			}
			differs = differs || !reflect.DeepEqual(a, testindex.Ranking(t, def, q, 100))
		}
		if !differs {
			t.Errorf("%s: 0 gave the default's rankings on 20 queries: the zero was replaced", c.variant)
		}
		if _, err := testindex.NewMethod(ix, c.variant, c.setting, "0.5"); err == nil {
			t.Errorf("%s accepted a %s setting it fixes", c.variant, c.setting)
		}
	}
	// the typed options: Go callers get the same rules
	o := fastinsight.DefaultOptions()
	o.BMax = 0
	if _, err := fastinsight.New(ix, testindex.Env(), o); err == nil {
		t.Error("fastinsight.New accepted b_max 0")
	}
}
