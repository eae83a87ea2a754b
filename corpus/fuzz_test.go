package corpus

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// The parsers a user can feed. Each target only asks that a parser return
// (a result or an error) without panicking or allocating beyond its input;
// the hostile-record tests pin the errors themselves. The record decoders
// run in memory (fast enough for millions of executions); the folder
// readers (BEIR, 2Wiki, KET-RAG, GraphRAG-Bench) go through files.

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func FuzzNodes(f *testing.F) {
	f.Add([]byte(goodNodes))
	f.Add([]byte("\xef\xbb\xbf{\"id\":\"a\",\"text\":\"x\\u0000\"}\n{\"id\":\"a\xff\"}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		readNodes(bytes.NewReader(b), NodesFile, ReadOptions{})
		readNodes(bytes.NewReader(b), NodesFile, ReadOptions{SkipInvalid: true, Logger: discard})
	})
}

func FuzzEdges(f *testing.F) {
	f.Add([]byte(`{"src":"a","dst":"b","weight":2,"rel":"r","kind":"k"}` + "\n"))
	f.Add([]byte(`{"src":"a","dst":"b","weight":1e39}` + "\n" + `{"src":"a","dst":"zz"}`))
	ids := map[string]int{"a": 1, "b": 2}
	f.Fuzz(func(t *testing.T, b []byte) {
		readEdges(bytes.NewReader(b), EdgesFile, ids, ReadOptions{})
	})
}

func FuzzQueries(f *testing.F) {
	f.Add([]byte(`{"id":"q1","text":"what","gold":["a"],"grades":{"a":2},"answers":["x"]}` + "\n"))
	ids := map[string]int{"a": 1, "b": 2}
	f.Fuzz(func(t *testing.T, b []byte) {
		readQueries(bytes.NewReader(b), QueriesFile, ids, ReadOptions{})
	})
}

func FuzzQrels(f *testing.F) {
	f.Add([]byte("query-id\tcorpus-id\tscore\nq1\td1\t1\n"))
	docs := map[string]int{"d1": 1}
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeQrels(bytes.NewReader(b), "qrels.tsv", docs, ReadOptions{SkipInvalid: true, Logger: discard})
	})
}

func FuzzJSONArrays(f *testing.F) {
	f.Add([]byte(`[{"title":"A","text":"a"}]`))
	f.Add([]byte(`[{"id":"x","question":"q","supporting_facts":["A"],"answer":"a","answer_aliases":["b"]}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var docs []struct{ Title, Text string }
		decodeJSONArray(b, "corpus.json", &docs)
		var qs []struct {
			ID, Question string
			Answer       any
		}
		decodeJSONArray(b, "questions.json", &qs)
	})
}

func fuzzFiles(t *testing.T, files map[string][]byte) string {
	dir := t.TempDir()
	for name, b := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func FuzzDatasetFolders(f *testing.F) {
	f.Add([]byte(`{"_id":"d1","title":"T","text":"x"}`+"\n"), []byte(`{"_id":"q1","text":"q"}`+"\n"), []byte("query-id\tcorpus-id\tscore\nq1\td1\t1\n"))
	f.Add([]byte(`[{"title":"A","text":"a"}]`), []byte(`[{"id":"x","question":"q","supporting_facts":["A"]}]`), []byte("one\ntwo\n"))
	f.Add([]byte("a\tr\tb(c)\nb(c)\tr\td\n"), []byte(""), []byte("q ?\td(d/)\ta#r#b(c)#r#d\nwhat [a]\tb(c)\n"))
	f.Add([]byte("a|r|b\n"), []byte(""), []byte("who [a]\tb\n"))
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		ReadBEIR(fuzzFiles(t, map[string][]byte{"corpus.jsonl": a, "queries.jsonl": b, "qrels/test.tsv": c}), "test", ReadOptions{})
		ReadTwoWiki(fuzzFiles(t, map[string][]byte{"corpus.json": a, "test_gfmrag.json": b}), ReadOptions{})
		ReadKETRAG(fuzzFiles(t, map[string][]byte{"document.txt": c, "qa-pairs.json": b}), ReadOptions{})
		ReadGraphRAGBench(fuzzFiles(t, map[string][]byte{"m_corpus.json": a, "m_questions.json": b}), ChunkOptions{Size: 3, Overlap: 1}, ReadOptions{})
		ReadPathQuestion(fuzzFiles(t, map[string][]byte{"2H-kb.txt": a, "PQ-2H.txt": c}), "PQ-2H", ReadOptions{SkipInvalid: true})
		ReadMetaQA(fuzzFiles(t, map[string][]byte{"kb.txt": a, "1-hop/qa_test.txt": c}), 1, ReadOptions{SkipInvalid: true})
	})
}
