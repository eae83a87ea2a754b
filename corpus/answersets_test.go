package corpus

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestChunk(t *testing.T) {
	text := "w1 w2  w3\nw4 w5 w6 w7"
	for _, c := range []struct {
		o    ChunkOptions
		want []string
	}{
		{ChunkOptions{Size: 3, Overlap: 1}, []string{"w1 w2 w3", "w3 w4 w5", "w5 w6 w7"}},
		{ChunkOptions{Size: 4, Overlap: 1}, []string{"w1 w2 w3 w4", "w4 w5 w6 w7"}},
		{ChunkOptions{Size: 5, Overlap: 2}, []string{"w1 w2 w3 w4 w5", "w4 w5 w6 w7"}}, // the last window ends at the end
		{ChunkOptions{Size: 10, Overlap: 0}, []string{"w1 w2 w3 w4 w5 w6 w7"}},
		{ChunkOptions{Size: 2, Overlap: 0}, []string{"w1 w2", "w3 w4", "w5 w6", "w7"}},
	} {
		got, err := Chunk(text, c.o)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Chunk(%+v) = %q, %v; want %q", c.o, got, err, c.want)
		}
	}
	for _, bad := range []ChunkOptions{{Size: 0}, {Size: 3, Overlap: 3}, {Size: 3, Overlap: -1}} {
		if _, err := Chunk(text, bad); err == nil {
			t.Errorf("Chunk accepted %+v", bad)
		}
	}
	if got, _ := Chunk("  \n ", DefaultChunkOptions()); len(got) != 0 {
		t.Errorf("blank text gave chunks %q", got)
	}
}

func TestReadKETRAG(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"input/document.txt":     "first passage\n\nthird line passage\n",
		"qa-pairs/qa-pairs.json": `[{"id":"q1","question":"which?","answer":"third"},{"id":"q2","question":"who?","answer":["A","B","A"]}]`,
	})
	c, err := ReadKETRAG(dir, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 2 || c.Nodes[0].ID != "l1" || c.Nodes[1].ID != "l3" || c.Nodes[1].Text != "third line passage" {
		t.Errorf("nodes %+v", c.Nodes)
	}
	if len(c.Queries) != 2 || !reflect.DeepEqual(c.Queries[1].Answers, []string{"A", "B"}) || len(c.Queries[0].Gold) != 0 {
		t.Errorf("queries %+v", c.Queries)
	}
	bad := writeFiles(t, map[string]string{
		"document.txt":  "x\n",
		"qa-pairs.json": `[{"id":"q1","question":"which?","answer":""}]`,
	})
	if _, err := ReadKETRAG(bad, ReadOptions{}); !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "qa-pairs.json:1") || !strings.Contains(err.Error(), "answer") {
		t.Errorf("empty answer: %v", err)
	}
	if c, err := ReadKETRAG(bad, ReadOptions{SkipInvalid: true}); err != nil || len(c.Queries) != 0 {
		t.Errorf("--skip-invalid: %v %+v", err, c)
	}
	weird := writeFiles(t, map[string]string{
		"document.txt":  "x\n",
		"qa-pairs.json": `[{"id":"q 1","question":"which?","answer":"x"}]`,
	})
	if _, err := ReadKETRAG(weird, ReadOptions{}); !errors.Is(err, ErrMalformed) {
		t.Errorf("id with a space: %v", err)
	}
	if _, err := ReadKETRAG(t.TempDir(), ReadOptions{}); err == nil || !strings.Contains(err.Error(), "document.txt") {
		t.Errorf("empty folder: %v", err)
	}
}

func TestReadGraphRAGBench(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"medical_corpus.json":    `[{"corpus_name":"Medical","context":"a b c d e f g"}]`,
		"medical_questions.json": `[{"id":"m1","question":"q?","answer":"c d"}]`,
	})
	c, err := ReadGraphRAGBench(dir, ChunkOptions{Size: 4, Overlap: 2}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, n := range c.Nodes {
		texts = append(texts, n.ID+"="+n.Text)
	}
	if want := []string{"d0c0=a b c d", "d0c1=c d e f", "d0c2=e f g"}; !reflect.DeepEqual(texts, want) {
		t.Errorf("chunks %q, want %q", texts, want)
	}
	if len(c.Queries) != 1 || c.Queries[0].Answers[0] != "c d" {
		t.Errorf("queries %+v", c.Queries)
	}
}

func TestReadTwoWikiAnswers(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"corpus.json":      `[{"title":"Alpha","text":"a text"}]`,
		"test_gfmrag.json": `[{"id":"x","question":"who?","supporting_facts":["Alpha"],"answer":"Detroit","answer_aliases":["Detroit","Motor City",""]}]`,
	})
	c, err := ReadTwoWiki(dir, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Queries[0].Answers, []string{"Detroit", "Motor City"}) {
		t.Errorf("answers %q", c.Queries[0].Answers)
	}
}

// The answer-set importers refuse what the corpus reader would refuse
// later: NUL characters and duplicate question ids.
func TestAnswerSetsRefuseWhatIndexWould(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"NUL in a line":         {"document.txt": "alpha\x00beta\n", "qa-pairs.json": `[{"id":"q","question":"q","answer":"a"}]`},
		"duplicate question id": {"document.txt": "alpha\n", "qa-pairs.json": `[{"id":"q","question":"q","answer":"a"},{"id":"q","question":"r","answer":"b"}]`},
		"NUL in JSON":           {"document.txt": "alpha\n", "qa-pairs.json": `[{"id":"q","question":"q\u0000","answer":"a"}]`},
		"not a list":            {"document.txt": "alpha\n", "qa-pairs.json": `{"id":"q"}`},
	} {
		if _, err := ReadKETRAG(writeFiles(t, files), ReadOptions{}); err == nil {
			t.Errorf("%s: accepted", name)
		} else if name == "not a list" && !strings.Contains(err.Error(), "want a JSON list") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
