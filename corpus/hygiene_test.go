package corpus

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// The defects a hostile user found, each with the error it now gets.
func TestHostileRecords(t *testing.T) {
	node := func(id string) string { return `{"id":"` + id + `","text":"t"}` + "\n" }
	cases := []struct {
		name, file, body string
		want             error
		where            string // "file:line: field"
	}{
		{"vertical tab in id", NodesFile, node(`a\u000bb`), ErrMalformed, `nodes.jsonl:1: field "id"`},
		{"form feed in id", NodesFile, node(`a\fb`), ErrMalformed, `nodes.jsonl:1: field "id"`},
		{"NBSP in id", NodesFile, node("a\u00a0b"), ErrMalformed, `nodes.jsonl:1: field "id"`},
		{"EM SPACE in id", NodesFile, node("a\u2003b"), ErrMalformed, `nodes.jsonl:1: field "id"`},
		{"invalid UTF-8 in id", NodesFile, node("x") + "{\"id\":\"a\xffb\",\"text\":\"t\"}\n", ErrMalformed, `nodes.jsonl:2: field "id"`},
		{"invalid UTF-8 in text", NodesFile, "{\"id\":\"a\",\"text\":\"caf\xe9\"}\n", ErrMalformed, `nodes.jsonl:1: field "text"`},
		{"escaped NUL", NodesFile, `{"id":"a","text":"x\u0000y"}` + "\n", ErrMalformed, `nodes.jsonl:1: field "text"`},
		{"query id with NBSP", QueriesFile, `{"id":"q` + "\u00a0" + `1","text":"x"}` + "\n", ErrMalformed, `queries.jsonl:1: field "id"`},
		{"weight too large", EdgesFile, `{"src":"a","dst":"b","weight":1e39}` + "\n", ErrMalformed, `edges.jsonl:1: field "weight"`},
		{"weight zero", EdgesFile, `{"src":"a","dst":"b","weight":0}` + "\n", ErrMalformed, `edges.jsonl:1: field "weight"`},
		{"weight underflows", EdgesFile, `{"src":"a","dst":"b","weight":1e-50}` + "\n", ErrMalformed, `edges.jsonl:1: field "weight"`},
		{"weight negative", EdgesFile, `{"src":"a","dst":"b","weight":-2}` + "\n", ErrMalformed, `edges.jsonl:1: field "weight"`},
		{"record too long", NodesFile, `{"id":"a","text":"` + strings.Repeat("x", MaxRecordBytes) + `"}` + "\n", ErrMalformed, `nodes.jsonl:1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{NodesFile: node("a") + node("b")}
			files[c.file] = c.body
			if c.file == NodesFile {
				files[c.file] = c.body
			}
			_, err := Load(writeFiles(t, files), ReadOptions{})
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.where) {
				t.Errorf("err = %v\nwant %v at %s", err, c.want, c.where)
			}
		})
	}
}

func TestFriendlyInputs(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		NodesFile:   "\xef\xbb\xbf" + `{"id":"a","text":"café"}` + "\n" + `{"id":"b","text":"literal \\u0000 text"}` + "\n",
		EdgesFile:   "\xef\xbb\xbf" + `{"src":"a","dst":"b"}` + "\n" + `{"src":"b","dst":"a","weight":2.5}` + "\n",
		QueriesFile: `{"id":"q1","text":"x","gold":["a"]}` + "\n",
	})
	c, err := Load(dir, ReadOptions{})
	if err != nil {
		t.Fatalf("a byte-order mark or an escaped backslash was refused: %v", err)
	}
	if c.Edges[0].Weight != 1 || c.Edges[1].Weight != 2.5 {
		t.Errorf("weights %v %v, want 1 (absent) and 2.5", c.Edges[0].Weight, c.Edges[1].Weight)
	}
	if c.Nodes[1].Text != `literal \u0000 text` {
		t.Errorf("text %q", c.Nodes[1].Text)
	}
	if _, err := ReadTwoWiki(writeFiles(t, map[string]string{
		"corpus.json":      "\xef\xbb\xbf" + `[{"title":"A","text":"a"}]`,
		"test_gfmrag.json": `[{"id":"x","question":"q","supporting_facts":["A"]}]`,
	}), ReadOptions{}); err != nil {
		t.Errorf("2wiki with a BOM: %v", err)
	}
	_, err = ReadTwoWiki(writeFiles(t, map[string]string{
		"corpus.json":      "[{\"title\":\"A\",\n\"text\":\"a\xff\"}]",
		"test_gfmrag.json": `[]`,
	}), ReadOptions{})
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), filepath.Join("corpus.json")+`:2: field "text"`) {
		t.Errorf("invalid UTF-8 in a JSON array: %v", err)
	}
}
