package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/synth"
)

// The FuseRAG commands end to end on a synthetic corpus: a random tiny
// decoder and adapters, one answer with --explain in each mode, a batch
// over questions, and the flags a user can get wrong.
func TestFuseRAGAnswer(t *testing.T) {
	dir := t.TempDir()
	c := synth.Generate(synth.Options{People: 40, Cities: 8, Countries: 3, Bands: 8, Queries: 6, Seed: 3})
	cdir, idir, llm, ad := filepath.Join(dir, "c"), filepath.Join(dir, "ix"), filepath.Join(dir, "llm"), filepath.Join(dir, "ad")
	if err := corpus.Write(cdir, c); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"index", cdir, "-o", idir, "--dims", "16", "--train-head=false"},
		{"model", "random", "--kind", "llama", "-o", llm, "--corpus", cdir},
		{"model", "random", "--kind", "fuserag", "-o", ad, "--decoder", llm, "--index", idir, "--memory-layers", "1"},
		{"model", "random", "--kind", "fuserag", "-o", ad + "-default", "--decoder", llm, "--index", idir}, // --memory-count 4 on 2 layers: both
	} {
		if out, err := run(t, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	base := []string{"answer", "--index", idir, "--graph-kind", "mentions", "--decoder", llm, "--max-tokens", "3"}
	q := c.Queries[0].Text
	out, err := run(t, append(base, "--fuserag", ad, "--explain", q)...)
	if err != nil || !strings.Contains(out, "B_q (") || !strings.Contains(out, "anchors S_q") || !strings.Contains(out, "pooling+GAT") {
		t.Fatalf("fuserag answer: %v\n%s", err, out)
	}
	out, err = run(t, append(base, "--mode", "text", "--explain", q)...)
	if err != nil || !strings.Contains(out, "text mode") || strings.Contains(out, "pooling+GAT") {
		t.Fatalf("text answer: %v\n%s", err, out)
	}
	answers := filepath.Join(dir, "answers.jsonl")
	out, err = run(t, append(base, "--fuserag", ad, "--mode", "fuserag,text", "--warm", "--queries", filepath.Join(cdir, "queries.jsonl"),
		"--limit", "2", "--out", answers)...)
	if err != nil || !strings.Contains(out, "fuserag-warm") {
		t.Fatalf("batch: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(answers)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 6 {
		t.Fatalf("2 questions × 3 runs: want 6 lines, got %d", len(lines))
	}
	var last answerRow
	if err := json.Unmarshal([]byte(lines[5]), &last); err != nil || last.Mode != "fuserag-warm" || last.Cached == 0 || last.Encoded != 0 {
		t.Fatalf("the warm run must use cached states: %+v %v", last, err)
	}
	if _, err := run(t, append(base, "--fuserag", ad, "--queries", filepath.Join(cdir, "queries.jsonl"), "--out", answers)...); err == nil ||
		!strings.Contains(err.Error(), "never written over") {
		t.Errorf("an existing --out must be refused: %v", err)
	}
	for _, bad := range [][]string{
		append(base, q),                                                         // fuserag mode without adapters
		append(base, "--mode", "latent", q),                                     // unknown mode
		append(base, "--fuserag", ad, "--tau", "0", q),                          // τ out of range
		append(base, "--fuserag", ad, "--temperature", "-1", q),                 // bad temperature
		append(base, "--fuserag", ad, "--fuserag-k", "0", q),                    // K = 0
		append(base, "--mode", "text", "--fuserag", ad, q),                      // adapters in text mode
		append(base, "--fuserag", ad, "--warm", q),                              // --warm without --queries
		{"answer", "--index", idir, "--decoder", llm, "--mode", "text"},         // no question
		{"model", "random", "--kind", "fuserag", "-o", filepath.Join(dir, "x")}, // no decoder
		{"model", "random", "--kind", "llama", "--shape", "70b", "-o", filepath.Join(dir, "y")},
		{"model", "random", "--kind", "fuserag", "-o", filepath.Join(dir, "z"), "--decoder", llm, "--index", idir, "--memory-layers", "7"},
		{"model", "random", "--kind", "fuserag", "-o", filepath.Join(dir, "z"), "--decoder", llm, "--index", idir, "--rank", "9223372036854775807"},
		{"model", "random", "--kind", "fuserag", "-o", filepath.Join(dir, "z"), "--decoder", llm, "--index", idir, "--pool-dim", "9223372036854775807"},
		{"model", "random", "--kind", "llama", "-o", filepath.Join(dir, "y"), "--hidden", "1048576", "--layers", "1000"}, // not an OOM
		append(base, "--mode", "text", "--max-tokens", "9223372036854775807", q),
	} {
		if _, err := run(t, bad...); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// make demo runs every registered method the demo index can serve: a
// method needing a trained model is named as not run, never an error.
func TestDemoRunsEveryMethod(t *testing.T) {
	out, err := run(t, "demo", "--out", filepath.Join(t.TempDir(), "demo"), "--people", "60", "--queries", "20")
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for _, m := range []string{"fuserag", "ketrag", "nexusrag", "ppr", "fastinsight", "not run: seeder"} {
		if !strings.Contains(out, m) {
			t.Errorf("demo output lacks %q:\n%s", m, out)
		}
	}
}
