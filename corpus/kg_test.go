package corpus

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/internal/testdata"
)

func TestReadPathQuestionShared(t *testing.T) {
	dir := testdata.Dataset(t, "pathquestion")
	want := map[string][2]int{"PQ-2H": {1908, 1056}, "PQ-3H": {5198, 1836}, "PQL-2H": {1594, 5034}, "PQL-3H": {1031, 6505}}
	for set, w := range want {
		c, err := ReadPathQuestion(dir, set, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		total := len(c.TrainQueries) + len(c.DevQueries) + len(c.Queries)
		if total != w[0] || len(c.Nodes) != w[1] {
			t.Fatalf("%s: %d questions and %d entities, want %d and %d", set, total, len(c.Nodes), w[0], w[1])
		}
		if len(c.TrainQueries) != total*8/10 || len(c.DevQueries) != total/10 {
			t.Fatalf("%s: split %d/%d/%d", set, len(c.TrainQueries), len(c.DevQueries), len(c.Queries))
		}
		ids := c.NodeIndex()
		for _, q := range slices.Concat(c.TrainQueries, c.DevQueries, c.Queries) {
			if len(q.Topics) != 1 || len(q.Gold) == 0 || len(q.Answers) != len(q.Gold) {
				t.Fatalf("%s: question %+v", set, q)
			}
			for _, g := range append(q.Gold, q.Topics...) {
				if _, ok := ids[g]; !ok {
					t.Fatalf("%s: %q is not a node", set, g)
				}
			}
		}
	}
	// The split is fixed: the same questions land in the same split every run.
	a, _ := ReadPathQuestion(dir, "PQ-2H", ReadOptions{})
	b, _ := ReadPathQuestion(dir, "PQ-2H", ReadOptions{})
	if a.Queries[0].ID != b.Queries[0].ID || a.DevQueries[3].ID != b.DevQueries[3].ID {
		t.Fatal("the split moved between runs")
	}
}

func TestReadMetaQAShared(t *testing.T) {
	dir := testdata.Dataset(t, "metaqa_partial_kb")
	// The dataset's README: all answers within k hops of the topic for 9,296 of 9,947 1-hop,
	// 12,602 of 14,872 2-hop and 12,045 of 14,274 3-hop questions.
	for hops, want := range map[int][2]int{1: {9296, 9947}, 2: {12602, 14872}, 3: {12045, 14274}} {
		c, dropped, err := ReadMetaQA(dir, hops, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		kept := len(c.TrainQueries) + len(c.DevQueries) + len(c.Queries)
		if kept != want[0] || kept+dropped != want[1] || len(c.Edges) != 128185 || len(c.Nodes) != 42718 {
			t.Fatalf("%d-hop: kept %d, dropped %d, %d edges, %d entities", hops, kept, dropped, len(c.Edges), len(c.Nodes))
		}
	}
}

func TestKGHandCases(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"2H-kb.txt": "ann_lee\tspouse\tbob\nbob\tnationality\tunited_kingdom\nbob\tnationality\tunited_kingdom\n",
		"PQ-2H.txt": strings.Repeat("which nationality is ann_lee 's couple ?\tunited_kingdom(united_kingdom/)\tann_lee#spouse#bob#nationality#united_kingdom#<end>#united_kingdom\n", 10),
	})
	c, err := ReadPathQuestion(dir, "PQ-2H", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Edges) != 2 || c.Edges[0].Rel != "spouse" || c.Edges[0].Kind != KGEdgeKind || c.Nodes[0].Title != "ann lee" || c.Nodes[0].Aliases[0] != "ann_lee" {
		t.Fatalf("nodes %+v edges %+v", c.Nodes, c.Edges)
	}
	q := c.Queries[0]
	if q.Topics[0] != "ann_lee" || !slices.Equal(q.Gold, []string{"united_kingdom"}) || q.Answers[0] != "united kingdom" {
		t.Fatalf("query %+v", q)
	}
	if len(c.TrainQueries) != 8 || len(c.DevQueries) != 1 || len(c.Queries) != 1 {
		t.Fatalf("split %d/%d/%d", len(c.TrainQueries), len(c.DevQueries), len(c.Queries))
	}
	bad := writeFiles(t, map[string]string{"2H-kb.txt": "a\tr\n", "PQ-2H.txt": "q\ta()\ta#r#b\n"})
	if _, err := ReadPathQuestion(bad, "PQ-2H", ReadOptions{}); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), filepath.Join(bad, "2H-kb.txt")+":1") {
		t.Fatalf("a two-field triple: %v", err)
	}
	if _, err := ReadPathQuestion(dir, "PQ-9H", ReadOptions{}); err == nil {
		t.Fatal("an unknown set accepted")
	}
	meta := writeFiles(t, map[string]string{
		"kb.txt":            "Film A|directed_by|Jo Smith\nFilm A|starred_actors|Al Bo\nFilm B|starred_actors|Al Bo\n",
		"2-hop/qa_test.txt": strings.Repeat("which films share actors with [Film A]\tFilm B\nwho directed [Film Z]\tJo Smith\n", 10),
	})
	mc, dropped, err := ReadMetaQA(meta, 2, ReadOptions{})
	if err != nil || dropped != 10 || mc.Queries[0].Topics[0] != "Film_A" || mc.Nodes[0].Title != "Film A" {
		t.Fatalf("metaqa: dropped %d, %v, %+v", dropped, err, mc)
	}
}
