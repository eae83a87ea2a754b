package gar_test

import (
	"context"
	"testing"

	"github.com/gleaner-rag/gleaner/methods/internal/testindex"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func TestMain(m *testing.M) { testindex.Main(m) }

func TestGARScoresItsBudget(t *testing.T) {
	ix, qs := testindex.Shared(t)
	m := testindex.Method(t, ix, "gar", "graph-kind", "mentions", "bmax", "30", "batch", "10")
	var lists int
	var last []retrieve.Hit
	m.(retrieve.StreamingMethod).RetrieveStream(context.Background(), qs[0], 1000, func(h []retrieve.Hit) bool { lists++; last = h; return true })
	if pairs := m.(retrieve.PairCounter).EncodedPairs(); lists != 3 || pairs != 30 {
		t.Errorf("%d batches, %d pairs scored; want 3 and 30", lists, pairs)
	}
	if len(last) != 30 {
		t.Errorf("final list has %d nodes, want 30 (budget = vector depth, backfilled)", len(last))
	}
}
