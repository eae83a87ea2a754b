package lexical

import (
	"context"
	"testing"
)

// ScoreAllWithin over every document is ScoreAll; over a subset it is the
// BM25 of postings built from that subset alone.
func TestScoreAllWithinIsTheSubsetsBM25(t *testing.T) {
	texts := []string{"the city of Memphis on the river", "Memphis music and the blues", "Detroit city music",
		"a river city", "blues blues blues in Memphis"}
	build := func(ts []string) *BM25 {
		p, err := BuildPostings(context.Background(), len(ts), func(i int) string { return ts[i] }, nil)
		if err != nil {
			t.Fatal(err)
		}
		bm, _ := NewBM25(p, DefaultBM25())
		return bm
	}
	full := build(texts)
	const q = "memphis city blues"
	all, within := make([]float32, len(texts)), make([]float32, len(texts))
	full.ScoreAll(q, all)
	everything, _ := full.NewSubset([]uint64{0b11111})
	full.ScoreAllWithin(q, within, everything)
	for d := range all {
		if all[d] != within[d] {
			t.Errorf("doc %d: ScoreAll %v, ScoreAllWithin(all) %v", d, all[d], within[d])
		}
	}
	keep := map[uint32]bool{0: true, 2: true, 4: true}
	sub, err := full.NewSubset([]uint64{0b10101})
	if err != nil {
		t.Fatal(err)
	}
	alone := build([]string{texts[0], texts[2], texts[4]})
	want := make([]float32, 3)
	alone.ScoreAll(q, want)
	n, _ := full.ScoreAllWithin(q, within, sub)
	for i, d := range []uint32{0, 2, 4} {
		if within[d] != want[i] {
			t.Errorf("doc %d: %v within the subset, %v on its own postings", d, within[d], want[i])
		}
	}
	hits := full.SearchWithin(q, 10, sub)
	if len(hits) != 3 || hits[0].Score != max(within[0], within[2], within[4]) {
		t.Errorf("SearchWithin: %v, scores %v", hits, within)
	}
	for _, h := range hits {
		if !keep[uint32(h.Index)] || h.Score != within[h.Index] {
			t.Errorf("SearchWithin hit %v", h)
		}
	}
	if _, err := full.NewSubset(nil); err == nil {
		t.Error("a subset shorter than the collection was accepted")
	}
	if within[1] != 0 || within[3] != 0 || n != 3 {
		t.Errorf("outside the subset: %v, %v; matched %d", within[1], within[3], n)
	}
}
