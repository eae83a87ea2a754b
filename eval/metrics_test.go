package eval

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops"
)

// tol is a few float64 ulps of values near 1.
const tol = 1e-12

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > tol || got != got {
		t.Errorf("%s = %.15f, want %.15f", what, got, want)
	}
}

func TestScoreHandComputed(t *testing.T) {
	// relevant: a (grade 2), c (grade 1), z (grade 1, never retrieved)
	j := Judgements{"a": 2, "c": 1, "z": 1, "n": 0}
	m, ok := Score([]string{"b", "a", "n", "c", "d"}, j, []int{1, 2, 5})
	if !ok {
		t.Fatal("query with relevant docs skipped")
	}
	idcg5 := 2 + 1/math.Log2(3) + 1/math.Log2(4)
	dcg5 := 2/math.Log2(3) + 1/math.Log2(5)
	near(t, "ndcg@5", m["ndcg@5"], dcg5/idcg5)
	near(t, "ndcg@1", m["ndcg@1"], 0)
	near(t, "ndcg@2", m["ndcg@2"], (2/math.Log2(3))/(2+1/math.Log2(3)))
	near(t, "recall@2", m["recall@2"], 1.0/3)
	near(t, "recall@5", m["recall@5"], 2.0/3)
	near(t, "recall_cap@2", m["recall_cap@2"], 1.0/2)
	near(t, "recall_cap@1", m["recall_cap@1"], 0)
	near(t, "recall_cap@5", m["recall_cap@5"], 2.0/3)
	near(t, "hit@1", m["hit@1"], 0)
	near(t, "hit@2", m["hit@2"], 1)
	near(t, "mrr@1", m["mrr@1"], 0)
	near(t, "mrr@5", m["mrr@5"], 0.5)
}

func TestScoreSkipsQueriesWithoutRelevant(t *testing.T) {
	if _, ok := Score([]string{"a"}, Judgements{"a": 0}, []int{1}); ok {
		t.Error("query with only grade-0 judgements was scored")
	}
	if _, ok := Score([]string{"a"}, nil, []int{1}); ok {
		t.Error("query without judgements was scored")
	}
}

func TestScoreEmptyAndDuplicateRankings(t *testing.T) {
	m, _ := Score(nil, Judgements{"a": 1}, []int{10})
	near(t, "ndcg@10 of empty ranking", m["ndcg@10"], 0)
	// a duplicate counts once, at its first position
	m, _ = Score([]string{"a", "a", "b"}, Judgements{"a": 1, "b": 1}, []int{2})
	near(t, "recall@2 with duplicate", m["recall@2"], 1)
}

func TestReadTRECTieOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.trec")
	// b and c tie; trec_eval ranks the larger doc id first.
	body := "q1 Q0 b 1 0.5 x\nq1 Q0 a 3 0.9 x\nq1 Q0 c 2 0.5 x\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ReadTREC(path, false)
	if err != nil {
		t.Fatal(err)
	}
	got := r.Docs("q1")
	want := []string{"a", "c", "b"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
	m, _ := Score(got, Judgements{"b": 1}, []int{2, 3})
	near(t, "recall@2 (tie ranks b third)", m["recall@2"], 0)
	near(t, "mrr@3", m["mrr@3"], 1.0/3)
	r, err = ReadTREC(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Docs("q1"); got[0] != "b" || got[1] != "c" || got[2] != "a" {
		t.Errorf("by-rank order %v, want [b c a]", got)
	}
}

func TestReadTRECRejectsMalformed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.trec")
	os.WriteFile(path, []byte("q1 Q0 a 1 NaN x\n"), 0o644)
	if _, err := ReadTREC(path, false); err == nil {
		t.Error("NaN score accepted")
	}
	os.WriteFile(path, []byte("q1 Q0 a 1\n"), 0o644)
	if _, err := ReadTREC(path, false); err == nil {
		t.Error("short line accepted")
	}
}

func TestTRECRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rt.trec")
	run := Run{"q2": {{Doc: "x", Score: 2}, {Doc: "y", Score: 1}}, "q1": {{Doc: "z", Score: 3}}}
	f, _ := os.Create(path)
	if err := WriteTREC(f, run, "test"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	back, err := ReadTREC(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 || back["q2"][1].Doc != "y" || back["q1"][0].Score != 3 {
		t.Fatalf("round trip lost data: %v", back)
	}
}

// pathGraph: 0 - 1 - 2 - 3, plus a hub 1 - 4, 1 - 5 and a detour 0 - 6 - 7 - 3.
func topoGraph(t *testing.T) *graphops.Graph {
	t.Helper()
	es := []graphops.Edge{{Src: 0, Dst: 1}, {Src: 1, Dst: 2}, {Src: 2, Dst: 3}, {Src: 1, Dst: 4}, {Src: 5, Dst: 1},
		{Src: 0, Dst: 6}, {Src: 6, Dst: 7}, {Src: 7, Dst: 3}}
	g, err := graphops.Build(9, es, false)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestTopologicalRecallKnownPath(t *testing.T) {
	g := topoGraph(t)
	// seed 0, gold {0, 2, 8}: 0 retrieved (1), 2 via 0-1-2: u = ln(1+deg0)+ln(1+deg1)
	// deg0 = 2 (1, 6), deg1 = 4 (0, 2, 4, 5); 8 is isolated: contributes 0.
	res := TopologicalRecall(g, 9, []int32{0}, []int32{0, 2, 8}, 0)
	u := math.Log(3) + math.Log(5)
	near(t, "recall", res.Recall, 1.0/3)
	near(t, "misstr", res.MissTR, (1/(1+u))/3)
	near(t, "tr", res.TR, res.Recall+res.MissTR)
	// gold 3 from seed 0: two 3-hop paths, 0-1-2-3 costs ln3+ln5+ln3,
	// 0-6-7-3 costs ln3+ln3+ln3: the cheaper one counts.
	res = TopologicalRecall(g, 9, []int32{0}, []int32{3}, 0)
	near(t, "misstr via cheaper equal-hop path", res.MissTR, 1/(1+3*math.Log(3)))
	// a hop bound of 2 makes 3 unreachable
	res = TopologicalRecall(g, 9, []int32{0}, []int32{3}, 2)
	near(t, "misstr beyond max hops", res.MissTR, 0)
	// min over seeds: seed 2 reaches 3 in one hop, u = ln(1+deg2) = ln 3
	res = TopologicalRecall(g, 9, []int32{0, 2}, []int32{3}, 0)
	near(t, "misstr min over seeds", res.MissTR, 1/(1+math.Log(3)))
}

// TestTopologicalRecallOnAdjacencyView checks that an undirected view (as
// used for --graph-kind) gives the same TR as the graph it came from.
func TestTopologicalRecallOnAdjacencyView(t *testing.T) {
	g := topoGraph(t)
	a := graphops.Undirected(g, false, nil)
	for _, seeds := range [][]int32{{0}, {0, 2}, {5}} {
		want := TopologicalRecall(g, 9, seeds, []int32{0, 2, 3, 8}, 0)
		got := TopologicalRecall(a, 9, seeds, []int32{0, 2, 3, 8}, 0)
		near(t, "tr via adjacency", got.TR, want.TR)
		near(t, "misstr via adjacency", got.MissTR, want.MissTR)
	}
}

// A run gleaner writes reads back in its own order under trec_eval's tie
// rule: tied scores are written one ulp apart, tiny scores in full precision.
func TestWriteTRECKeepsOrder(t *testing.T) {
	run := Run{"q": {{Doc: "a", Score: 2}, {Doc: "b", Score: 1}, {Doc: "c", Score: 1}, {Doc: "d", Score: 1e-9}, {Doc: "e", Score: 1.0000001e-9}}}
	path := filepath.Join(t.TempDir(), "run.trec")
	f, _ := os.Create(path)
	if err := WriteTREC(f, run, "x"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	back, err := ReadTREC(path, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range back["q"] {
		got = append(got, e.Doc)
	}
	if strings.Join(got, "") != "abcde" {
		t.Errorf("read back in order %v, want a b c d e", got)
	}
	if back["q"][3].Score != 1e-9 {
		t.Errorf("a tiny score was rounded: %v", back["q"][3].Score)
	}
}

func TestOverlap(t *testing.T) {
	h := func(ids ...int32) []engine.Hit {
		var out []engine.Hit
		for _, i := range ids {
			out = append(out, engine.Hit{Index: i})
		}
		return out
	}
	for _, c := range []struct {
		got, want []engine.Hit
		x         float64
	}{{h(1, 2, 3), h(3, 2, 1), 1}, {h(1, 2), h(2, 5, 6, 7), 0.25}, {nil, h(1), 0}, {h(1), nil, 1}} {
		if x := Overlap(c.got, c.want); x != c.x {
			t.Errorf("Overlap(%v, %v) = %v, want %v", c.got, c.want, x, c.x)
		}
	}
}
