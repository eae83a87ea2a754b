package lexical

import (
	"context"
	"testing"
)

// An accumulator too small for an index (it grew) is dropped, not put
// back: the pool handed it out again at every query, each of which then
// allocated a fresh one.
func TestSmallAccumulatorsLeaveThePool(t *testing.T) {
	texts := []string{"memphis city", "memphis blues", "detroit city music", "a river city"}
	p, err := BuildPostings(context.Background(), len(texts), func(i int) string { return texts[i] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	bm, err := NewBM25(p, DefaultBM25())
	if err != nil {
		t.Fatal(err)
	}
	small := &accum{score: make([]float32, 1)}
	putAccum(small)
	a := bm.getAccum()
	if a == small || len(a.score) != len(texts) {
		t.Fatalf("got an accumulator of %d scores for %d documents", len(a.score), len(texts))
	}
	if got, _ := accums.Get().(*accum); got == small {
		t.Fatal("the accumulator too small for the index went back to the pool")
	}
	putAccum(a)
	if hits := bm.Search("memphis city", 2); len(hits) != 2 {
		t.Fatalf("search after the pool's churn: %v", hits)
	}
}
