package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/synth"
)

// chunkedIndex writes a synthetic corpus whose questions carry their gold
// titles as answers, token-chunks it and indexes the chunks.
func chunkedIndex(t *testing.T) (cdir, idir string) {
	t.Helper()
	dir := t.TempDir()
	c := synth.Generate(synth.Options{People: 40, Cities: 8, Countries: 3, Bands: 8, Queries: 8, Seed: 11})
	titles := map[string]string{}
	for _, n := range c.Nodes {
		titles[n.ID] = n.Title
	}
	for i, q := range c.Queries {
		for _, g := range q.Gold {
			c.Queries[i].Answers = append(c.Queries[i].Answers, titles[g])
		}
	}
	src, cdir, idir := filepath.Join(dir, "src"), filepath.Join(dir, "chunks"), filepath.Join(dir, "ix")
	if err := corpus.Write(src, c); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "chunk", src, "-o", cdir, "--tokens", "200", "--overlap", "20", "--split", "60", "--documents", "corpus"); err != nil || !strings.Contains(out, "pieces") {
		t.Fatalf("chunk: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(cdir, corpus.ChunksFile)); err != nil {
		t.Fatal("no chunks.jsonl beside the chunked corpus")
	}
	if out, err := run(t, "index", cdir, "-o", idir, "--dims", "16", "--train-head=false"); err != nil {
		t.Fatalf("index: %v\n%s", err, out)
	}
	return cdir, idir
}

// stubLLM answers chat completions with the first word of the text as an
// entity; after failAfter calls it answers 401 (0: never).
func stubLLM(t *testing.T, failAfter int64) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if failAfter > 0 && n > failAfter {
			http.Error(w, "key revoked", http.StatusUnauthorized)
			return
		}
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		word := strings.Trim(strings.Fields(req.Messages[1].Content + " x")[0], `"'.,`)
		content := fmt.Sprintf(`{"entities": [{"name": %q, "type": "THING", "description": "first word"}, {"name": "Chunk", "type": "THING", "description": "a chunk"}],
			"relationships": [{"source": %q, "target": "Chunk", "description": "opens a chunk", "weight": 2}]}`, word, word)
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": content}}},
			"usage": map[string]int{"prompt_tokens": 300, "completion_tokens": 50}})
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// TestKETRAGCLI: the local build, a context, eval at two budgets, the
// stats' cost table; the llm build against a stub server resumes from its
// cache after an interruption and pays nothing the second time.
func TestKETRAGCLI(t *testing.T) {
	_, idir := chunkedIndex(t)
	if out, err := run(t, "graph", "build", "--kind", "ketrag", "--index", idir, "--unit-tokens", "300"); err != nil || !strings.Contains(out, "entities") {
		t.Fatalf("local build: %v\n%s", err, out)
	}
	out, err := run(t, "query", "--index", idir, "--method", "ketrag", "--context", "--budget", "800", "--theta", "0.5", "Which band", "did", "the", "people", "join?")
	if err != nil || !strings.Contains(out, "-----Text source that may be relevant-----") || !strings.Contains(out, "of 800 tokens") {
		t.Fatalf("query --context: %v\n%s", err, out)
	}
	out, err = run(t, "eval", "--index", idir, "--method", "ketrag,bm25,vector", "--context-budget", "300,2000", "--columns", "context_answer_recall@300,context_answer_recall@2000,context_tokens@2000")
	if err != nil || !strings.Contains(out, "context_answer_recall@2000") || strings.Count(out, "\n") < 4 {
		t.Fatalf("eval: %v\n%s", err, out)
	}
	out, err = run(t, "graph", "stats", "--kind", "ketrag", "--index", idir, "--betas", "0.5,1")
	if err != nil || !strings.Contains(out, "input tokens") || !strings.Contains(out, "no LLM extracted") {
		t.Fatalf("stats: %v\n%s", err, out)
	}

	srv, calls := stubLLM(t, 2)
	cache := filepath.Join(t.TempDir(), "cache")
	llm := []string{"graph", "build", "--kind", "ketrag", "--index", idir, "--unit-tokens", "300", "--extractor", "llm",
		"--llm-url", srv.URL + "/v1", "--llm-model", "stub", "--llm-cache", cache, "--llm-concurrency", "1", "--workers", "1"}
	if _, err := run(t, llm...); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a revoked key: %v", err)
	}
	srv2, calls2 := stubLLM(t, 0)
	llm[11] = srv2.URL + "/v1"
	out, err = run(t, llm...)
	if err != nil || !strings.Contains(out, "2 replies from the cache") {
		t.Fatalf("resumed build: %v\n%s", err, out)
	}
	paid := calls2.Load()
	out, err = run(t, llm...)
	if err != nil || calls2.Load() != paid || !strings.Contains(out, "llm: 0 calls") || calls.Load() != 3 {
		t.Fatalf("rebuild from the cache: %d new calls, %v\n%s", calls2.Load()-paid, err, out)
	}
	out, err = run(t, "graph", "stats", "--kind", "ketrag", "--index", idir)
	if err != nil || !strings.Contains(out, "output scaled from the LLM's accounted replies") {
		t.Fatalf("stats after an llm build: %v\n%s", err, out)
	}
}

func TestKETRAGCLIRefusals(t *testing.T) {
	cdir, idir := chunkedIndex(t)
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "thesis.tex"), []byte("mine"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"graph", "build", "--kind", "ketrag", "--index", idir, "--beta", "0"}, "--beta"},
		{[]string{"graph", "build", "--kind", "ketrag", "--index", idir, "--selection", "random"}, "--selection"},
		{[]string{"graph", "build", "--kind", "ketrag", "--index", idir, "--seed", "7"}, "--seed 7: applies to selection uniform"},
		{[]string{"graph", "build", "--kind", "ketrag", "--index", idir, "--pr-damping", "1"}, "--pr-damping"},
		{[]string{"graph", "build", "--kind", "ketrag", "--index", idir, "--unit-tokens", "0"}, "--unit-tokens"},
		{[]string{"graph", "build", "--kind", "ketrag", "--index", idir, "--workers", "0"}, "--workers"},
		{[]string{"graph", "build", "--kind", "ketrag", "--index", idir, "--extractor", "llm", "--llm-url", "http://127.0.0.1:9/v1", "--llm-model", "m", "--llm-cache", foreign}, "not a gleaner reply cache"},
		{[]string{"graph", "stats", "--kind", "ketrag", "--index", idir, "--betas", ""}, "--betas"},
		{[]string{"graph", "stats", "--kind", "ketrag", "--index", idir, "--betas", "0.5,0.5"}, "twice"},
		{[]string{"eval", "--index", idir, "--method", "bm25", "--context-budget", "2000,,100"}, "empty item"},
		{[]string{"eval", "--index", idir, "--method", "bm25", "--context-budget", "100", "--theta", "0.2"}, "--theta applies to --method ketrag"},
		{[]string{"query", "--index", idir, "--method", "bm25", "--context", "-k", "5", "x"}, "-k does not apply with --context"},
		{[]string{"query", "--index", idir, "--method", "bm25", "--top-keywords", "5", "x"}, "--top-keywords applies to --method ketrag"},
		{[]string{"chunk", cdir, "-o", cdir}, "is the corpus being chunked"},
		{[]string{"graph", "build", "--kind", "ketrag", "--index", idir, "--extractor", "gpt"}, "--extractor"},
		{[]string{"graph", "build", "--kind", "ketrag", "--index", idir, "--llm-model", "m"}, "--llm-model (given): applies to extractor llm"},
		{[]string{"graph", "build", "--kind", "ketrag", "--index", idir, "--extractor", "llm", "--llm-model", "m"}, "base URL"},
		{[]string{"graph", "build", "--kind", "ketrag", "--index", idir, "--extractor", "llm", "--llm-url", "http://x/v1"}, "model"},
		{[]string{"graph", "build", "--kind", "ketrag", "--index", idir, "--extractor", "llm", "--ner", "prose"}, "--ner prose: applies to extractor local"},
		{[]string{"graph", "build", "--kind", "trigraph", "--index", idir, "--beta", "0.5"}, "--beta applies to --kind ketrag"},
		{[]string{"graph", "build", "--kind", "ketrag", "--index", idir, "--tau", "0.5"}, "--tau applies to --kind trigraph"},
		{[]string{"query", "--index", idir, "--method", "ketrag", "x"}, "graph build --kind ketrag"},
		{[]string{"eval", "--index", idir, "--method", "bm25", "--context-budget", "0"}, "--context-budget"},
		{[]string{"eval", "--index", idir, "--method", "bm25", "--context-budget", "12k"}, "--context-budget"},
		{[]string{"eval", "--index", idir, "--method", "bm25", "--context-budget", "100", "--columns", "context_answer_recall@7"}, "not in --context-budget"},
		{[]string{"eval", "--index", idir, "--method", "ketrag", "--theta", "2"}, "--theta"},
		{[]string{"graph", "stats", "--kind", "ketrag", "--index", idir}, "graph build --kind ketrag"},
		{[]string{"chunk", cdir, "-o", filepath.Join(t.TempDir(), "c"), "--overlap", "1200"}, "--overlap"},
		{[]string{"chunk", cdir, "-o", filepath.Join(t.TempDir(), "c"), "--documents", "file"}, "--documents"},
	} {
		if _, err := run(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
}
