package lexical

import (
	"context"
	"strings"
	"testing"
)

// An accumulator too small for an index (it grew) is dropped, not put
// back: the pool handed it out again at every query, each of which then
// allocated a fresh one.
func TestSmallAccumulatorsLeaveThePool(t *testing.T) {
	texts := []string{"memphis city", "memphis blues", "detroit city music", "a river city"}
	bm := bm25Over(t, texts)
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

// TestCorruptLengthRefused: a document length the postings cannot hold
// (a corrupt length file) is refused, not a norm table of gigabytes.
func TestCorruptLengthRefused(t *testing.T) {
	p, err := BuildPostings(context.Background(), 2, func(i int) string { return "alpha beta" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.DocLen[1] = 1<<32 - 1
	if _, err := NewBM25(p, DefaultBM25()); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("a length of 2^32-1 words: %v, want it refused", err)
	}
	p.DocLen[1] = plainLength // unchecked, and allowed
	if _, err := NewBM25(p, DefaultBM25()); err != nil {
		t.Fatal(err)
	}
}
