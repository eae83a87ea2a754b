package ketrag

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// TestFilterRelationshipsGraphRAGOrder: in-network relationships first by
// rank, then out-of-network ones by how many selected entities their
// outside end links to, then rank, at most TopRelationships per selected
// entity.
func TestFilterRelationshipsGraphRAGOrder(t *testing.T) {
	// Entities A B C D E; relationships A-B, A-C, B-C, A-D, B-E.
	src, dst := []int32{0, 0, 1, 0, 1}, []int32{1, 2, 2, 3, 4}
	k := &KETRAG{RelSrc: src, RelDst: dst, EntityRank: []int32{3, 3, 2, 1, 1}}
	rows := make([][]int32, 5)
	for r := range src {
		rows[src[r]] = append(rows[src[r]], int32(r))
		rows[dst[r]] = append(rows[dst[r]], int32(r))
	}
	k.EntityRels = graphops.RowsCSR(rows)
	m := &ketrag{k: k, o: Options{TopRelationships: 1}}
	all := &scope{full: true, rank: k.EntityRank}
	if got := m.filterRelationships(all, []int32{0, 1}); !slices.Equal(got, []int32{0, 1, 2}) {
		t.Fatalf("got %v, want [0 1 2]: A-B in network, then A-C and B-C (C links both)", got)
	}
	m.o.TopRelationships = 10
	if got := m.filterRelationships(all, []int32{0, 1}); !slices.Equal(got, []int32{0, 1, 2, 3, 4}) {
		t.Fatalf("got %v", got)
	}
	if got := m.filterRelationships(all, []int32{3}); !slices.Equal(got, []int32{3}) {
		t.Fatalf("a single out-of-network relationship: %v", got)
	}
}

func TestPieceChunks(t *testing.T) {
	// Core chunks 2 (5 tokens) and 7 (4 tokens) form unit 0 with a line
	// break between them (10 tokens); text units of 3 tokens.
	k := &KETRAG{Core: []int32{2, 7}, UnitPtr: []int64{0, 2}, NodeTokens: make([]int32, 8),
		PieceUnit: []int32{0, 0, 0, 0}, PieceTokens: []int32{3, 3, 3, 1}}
	k.NodeTokens[2], k.NodeTokens[7] = 5, 4
	got := pieceChunks(k)
	want := [][]int32{{2}, {2}, {7}, {7}} // tokens 3–5: 2's last two and the break
	for p := range want {
		if !slices.Equal(got[p], want[p]) {
			t.Fatalf("piece %d: %v, want %v", p, got[p], want[p])
		}
	}
}

func TestPyFloat(t *testing.T) {
	for x, want := range map[float64]string{1: "1.0", 2.5: "2.5", 12: "12.0", 1e-5: "1e-05", 3e20: "3e+20"} {
		if got := pyFloat(x); got != want {
			t.Errorf("pyFloat(%v) = %q, want %q", x, got, want)
		}
	}
}

func TestBudgetCeiling(t *testing.T) {
	for _, b := range []int{0, -1, retrieve.MaxContextBudget + 1, int(^uint(0) >> 1)} {
		if retrieve.CheckBudget(b) == nil || (Options{Budget: b, TopKeywords: 1, TopEntities: 1}).Validate() == nil {
			t.Errorf("budget %d accepted", b)
		}
	}
}

// An LLM extraction is never rerun by a refresh: it costs calls.
func TestRefreshRefusesLLMExtraction(t *testing.T) {
	_, err := refresh(context.Background(), nil, []byte(`{"extractor":"llm:some-model:v1"}`), index.RefreshEnv{})
	if err == nil || !strings.Contains(err.Error(), "gleaner graph build --kind ketrag") {
		t.Fatalf("got %v, want a refusal naming the build command", err)
	}
	if _, err := refresh(context.Background(), nil, []byte(`{}`), index.RefreshEnv{}); err == nil {
		t.Fatal("no recorded settings: refreshed anyway")
	}
}

// TestRefreshRefusesABadRecordedSearch: a manifest's chunk graph search
// that no build can run makes the structures unrefreshable, with the way
// to build them, rather than failing inside the build.
func TestRefreshRefusesABadRecordedSearch(t *testing.T) {
	for _, settings := range []string{
		`{"extractor":"local:prose","search":""}`,
		`{"extractor":"local:prose","search":"fast"}`,
		`{"extractor":"local:prose","search":"hnsw","ef":0}`,
	} {
		if _, _, err := refreshSettings(nil, []byte(settings)); !errors.Is(err, index.ErrNotRefreshable) {
			t.Errorf("%s: %v; want ErrNotRefreshable", settings, err)
		}
	}
}
