package corpus

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const goodNodes = `{"id":"a","title":"Alpha","text":"first node"}
{"id":"b","text":"second node","type":"entity","aliases":["B","bee"]}
`

func TestLoadRoundTrip(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		NodesFile:   goodNodes,
		EdgesFile:   `{"src":"a","dst":"b","rel":"knows","kind":"kg"}` + "\n",
		QueriesFile: `{"id":"q1","text":"what is alpha","gold":["a"],"grades":{"a":2}}` + "\n",
	})
	c, err := Load(dir, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 2 || len(c.Edges) != 1 || len(c.Queries) != 1 {
		t.Fatalf("loaded %d nodes %d edges %d queries", len(c.Nodes), len(c.Edges), len(c.Queries))
	}
	if c.Edges[0].Weight != 1 {
		t.Errorf("default edge weight %v, want 1", c.Edges[0].Weight)
	}
	out := filepath.Join(t.TempDir(), "copy")
	if err := Write(out, c); err != nil {
		t.Fatal(err)
	}
	back, err := Load(out, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if back.Nodes[1].Aliases[1] != "bee" || back.Queries[0].Judgements()["a"] != 2 {
		t.Errorf("round trip lost fields: %+v %+v", back.Nodes[1], back.Queries[0])
	}
}

func TestReadErrorsNameFileLineField(t *testing.T) {
	cases := []struct {
		name, file, body string
		wantErr          error
		wantLoc          string
	}{
		{"malformed json", NodesFile, goodNodes + "{\"id\": \"c\", \"text\": \n", ErrMalformed, NodesFile + ":3"},
		{"duplicate id", NodesFile, goodNodes + `{"id":"a","text":"again"}` + "\n", ErrDuplicate, NodesFile + ":3: field \"id\""},
		{"empty text", NodesFile, goodNodes + `{"id":"c","text":"  "}` + "\n", ErrMissing, NodesFile + ":3: field \"text\""},
		{"missing id", NodesFile, `{"text":"x"}` + "\n", ErrMissing, NodesFile + ":1: field \"id\""},
		{"wrong type", NodesFile, `{"id":7,"text":"x"}` + "\n", ErrMalformed, NodesFile + ":1: field \"id\""},
		{"dangling edge", EdgesFile, `{"src":"a","dst":"zz"}` + "\n", ErrUnknownID, EdgesFile + ":1: field \"dst\""},
		{"negative weight", EdgesFile, `{"src":"a","dst":"b","weight":-1}` + "\n", ErrMalformed, EdgesFile + ":1: field \"weight\""},
		{"unknown gold", QueriesFile, `{"id":"q","text":"t","gold":["nope"]}` + "\n", ErrUnknownID, QueriesFile + ":1: field \"gold\""},
		{"empty query", QueriesFile, `{"id":"q","text":""}` + "\n", ErrMissing, QueriesFile + ":1: field \"text\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{NodesFile: goodNodes}
			files[c.file] = c.body
			_, err := Load(writeFiles(t, files), ReadOptions{})
			var re *RecordError
			if !errors.As(err, &re) || !errors.Is(err, c.wantErr) {
				t.Fatalf("err = %v, want a RecordError wrapping %v", err, c.wantErr)
			}
			if !strings.Contains(err.Error(), c.wantLoc) {
				t.Errorf("error %q does not name %q", err, c.wantLoc)
			}
		})
	}
}

func TestSkipInvalidDropsRecordsButNotDuplicates(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		NodesFile: goodNodes + `{"id":"c","text":""}` + "\n",
		EdgesFile: `{"src":"a","dst":"c"}` + "\n" + `{"src":"a","dst":"b"}` + "\n",
	})
	c, err := Load(dir, ReadOptions{SkipInvalid: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 2 || len(c.Edges) != 1 {
		t.Fatalf("kept %d nodes, %d edges; want 2, 1", len(c.Nodes), len(c.Edges))
	}
	dup := writeFiles(t, map[string]string{NodesFile: goodNodes + `{"id":"a","text":"x"}` + "\n"})
	if _, err := Load(dup, ReadOptions{SkipInvalid: true}); !errors.Is(err, ErrDuplicate) {
		t.Errorf("duplicate id with SkipInvalid: err = %v", err)
	}
}

func TestReadBEIR(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"corpus.jsonl":    `{"_id":"d1","title":"T1","text":"one"}` + "\n" + `{"_id":"d2","title":"","text":"two"}` + "\n",
		"queries.jsonl":   `{"_id":"1","text":"q one"}` + "\n" + `{"_id":"2","text":"q two"}` + "\n",
		"qrels/test.tsv":  "query-id\tcorpus-id\tscore\n1\td2\t1\n1\td1\t2\n",
		"qrels/train.tsv": "query-id\tcorpus-id\tscore\n2\td1\t1\n",
	})
	c, err := ReadBEIR(dir, "test", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 2 || len(c.Queries) != 1 || c.Queries[0].ID != "1" {
		t.Fatalf("got %d nodes, queries %+v", len(c.Nodes), c.Queries)
	}
	if j := c.Queries[0].Judgements(); j["d1"] != 2 || j["d2"] != 1 {
		t.Errorf("judgements %v", j)
	}
	bad := writeFiles(t, map[string]string{
		"corpus.jsonl": `{"_id":"d1","text":"one"}` + "\n", "queries.jsonl": `{"_id":"1","text":"q"}` + "\n",
		"qrels/test.tsv": "1\tmissing\t1\n",
	})
	if _, err := ReadBEIR(bad, "test", ReadOptions{}); !errors.Is(err, ErrUnknownID) || !strings.Contains(err.Error(), "test.tsv:1") {
		t.Errorf("unknown qrels doc: err = %v", err)
	}
}

func TestReadTwoWiki(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"corpus.json":      `[{"title":"Alpha","text":"a text"},{"title":"Beta","text":"b text"},{"title":"Alpha","text":"another alpha"}]`,
		"test_gfmrag.json": `[{"id":"x","question":"who?","supporting_facts":["Alpha","Beta"]}]`,
	})
	c, err := ReadTwoWiki(dir, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(c.Queries[0].Gold, ",")
	if got != "p0,p2,p1" {
		t.Errorf("gold %s, want p0,p2,p1 (every passage of a title)", got)
	}
	bad := writeFiles(t, map[string]string{
		"corpus.json":      `[{"title":"Alpha","text":"a"}]`,
		"test_gfmrag.json": `[{"id":"x","question":"q","supporting_facts":["Gamma"]}]`,
	})
	if _, err := ReadTwoWiki(bad, ReadOptions{}); !errors.Is(err, ErrUnknownID) || !strings.Contains(err.Error(), "test_gfmrag.json:1") {
		t.Errorf("unknown title: err = %v", err)
	}
}

func TestWriteFileAtomicLeavesNothingOnError(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.jsonl")
	os.WriteFile(p, []byte("old"), 0o644)
	err := WriteFileAtomic(p, func(w io.Writer) error { w.Write([]byte("partial")); return errors.New("boom") })
	if err == nil {
		t.Fatal("error swallowed")
	}
	b, _ := os.ReadFile(p)
	ents, _ := os.ReadDir(dir)
	if string(b) != "old" || len(ents) != 1 {
		t.Errorf("file now %q with %d entries in the folder", b, len(ents))
	}
}

// Writing over an existing corpus replaces it as a whole (no stale
// edges.jsonl), keeps the user's other files, and refuses folders that are
// not corpora.
func TestWriteReplacesWholeCorpus(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	withEdges := &Corpus{Nodes: []Node{{ID: "a", Text: "x"}, {ID: "b", Text: "y"}}, Edges: []Edge{{Src: "a", Dst: "b"}},
		Queries: []Query{{ID: "q", Text: "x", Gold: []string{"a"}}}}
	if err := Write(dir, withEdges); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	if err := Write(dir, &Corpus{Nodes: []Node{{ID: "z", Text: "only"}}}); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{EdgesFile, QueriesFile} {
		if _, err := os.Stat(filepath.Join(dir, gone)); err == nil {
			t.Errorf("stale %s kept beside the new corpus", gone)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "mine" {
		t.Error("the user's notes.txt was lost")
	}
	c, err := Load(dir, ReadOptions{})
	if err != nil || len(c.Nodes) != 1 || len(c.Edges) != 0 {
		t.Fatalf("reloaded %+v, %v", c, err)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "thesis.tex"), []byte("x"), 0o644)
	if err := Write(other, withEdges); !errors.Is(err, ErrNotCorpus) {
		t.Errorf("writing into a folder that is not a corpus: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, NodesFile)); err == nil {
		t.Error("wrote into a foreign folder")
	}
}

// Write refuses what reading back would refuse, and keeps the earlier
// corpus: an oversized chunk or a repeated id names the record, and nothing
// is replaced.
func TestWriteRefusesUnreadableNodes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	if err := Write(dir, &Corpus{Nodes: []Node{{ID: "a", Text: "kept"}}}); err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("w ", MaxRecordBytes/2+1)
	for name, nodes := range map[string][]Node{
		"oversized": {{ID: "a", Text: "x"}, {ID: "b", Text: huge}},
		"duplicate": {{ID: "a", Text: "x"}, {ID: "a", Text: "y"}},
	} {
		err := Write(dir, &Corpus{Nodes: nodes})
		var re *RecordError
		if !errors.As(err, &re) || re.Line != 2 {
			t.Errorf("%s: %v, want a record error on line 2", name, err)
		}
	}
	if c, err := Load(dir, ReadOptions{}); err != nil || len(c.Nodes) != 1 || c.Nodes[0].Text != "kept" {
		t.Fatalf("the earlier corpus was not kept: %+v, %v", c, err)
	}
}
