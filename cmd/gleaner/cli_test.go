package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/testdata"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRoot()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"--log-level", "warn"}, args...))
	err := cmd.Execute()
	return out.String(), err
}

func TestEndToEnd(t *testing.T) {
	dir := t.TempDir()
	src, cdir, idir := filepath.Join(dir, "src"), filepath.Join(dir, "corpus"), filepath.Join(dir, "index")
	c := synth.Generate(synth.Options{People: 100, Cities: 20, Countries: 5, Bands: 20, Queries: 40, Seed: 2})
	if err := corpus.Write(src, c); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "import", "jsonl", src, "-o", cdir); err != nil || !strings.Contains(out, "40 queries") {
		t.Fatalf("import: %v\n%s", err, out)
	}
	if out, err := run(t, "index", cdir, "-o", idir, "--dims", "32"); err != nil {
		t.Fatalf("index: %v\n%s", err, out)
	}
	out, err := run(t, "index", "info", idir)
	if err != nil || !strings.Contains(out, "checksums ok") || !strings.Contains(out, "145 × 32") {
		t.Fatalf("info: %v\n%s", err, out)
	}
	out, err = run(t, "query", "--index", idir, "-k", "3", c.Nodes[0].Title)
	if err != nil || !strings.Contains(out, c.Nodes[0].Title) {
		t.Fatalf("query: %v\n%s", err, out)
	}
	out, err = run(t, "train", "head", "--index", idir, "--pseudo", "300", "--epochs", "5")
	if err != nil || !strings.Contains(out, "held-out groups") || !strings.Contains(out, "ablation") {
		t.Fatalf("train head: %v\n%s", err, out)
	}
	out, err = run(t, "query", "--index", idir, "--method", "re2", "-k", "3", c.Nodes[0].Title)
	if err != nil || !strings.Contains(out, "rank") {
		t.Fatalf("re2 query: %v\n%s", err, out)
	}
	report := filepath.Join(dir, "r.json")
	out, err = run(t, "eval", "--index", idir, "--method", "bm25,vector", "--k", "10", "--report", report)
	if err != nil || !strings.Contains(out, "ndcg@10") || !strings.Contains(out, "tr@10") {
		t.Fatalf("eval: %v\n%s", err, out)
	}
	checkReport(t, report)
	// the run files written beside the report evaluate to the same numbers
	out, err = run(t, "eval", "--index", idir, "--method", "bm25", "--run-file", filepath.Join(dir, "r.runs", "bm25.trec"), "--run-file-by-rank", "--cutoffs", "10")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 3 || strings.Fields(lines[1])[3] != strings.Fields(lines[2])[3] {
		t.Fatalf("run-file eval: %v\n%s", err, out)
	}
}

func checkReport(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Methods []struct {
			Method  string             `json:"method"`
			Metrics map[string]float64 `json:"metrics"`
			RunFile string             `json:"run_file"`
		} `json:"methods"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Methods) != 2 {
		t.Fatalf("report has %d methods", len(rep.Methods))
	}
	for _, m := range rep.Methods {
		for _, name := range []string{"ndcg@10", "recall@5", "recall_cap@10", "hit@1", "mrr@10", "tr@10", "misstr@10"} {
			v, ok := m.Metrics[name]
			if !ok || v < 0 || v > 1 {
				t.Errorf("%s: metric %s = %v (present %v)", m.Method, name, v, ok)
			}
		}
		if _, err := os.Stat(m.RunFile); err != nil {
			t.Errorf("%s: run file: %v", m.Method, err)
		}
	}
}

func TestBadInputsGiveClearErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "nodes.jsonl"), []byte(`{"id":"a","text":"x"}`+"\n"+`{"id":"a","text":"y"}`+"\n"), 0o644)
	_, err := run(t, "index", dir, "-o", filepath.Join(dir, "ix"))
	if err == nil || !strings.Contains(err.Error(), "nodes.jsonl:2") {
		t.Errorf("duplicate id: %v", err)
	}
	_, err = run(t, "query", "--index", filepath.Join(dir, "missing"), "x")
	if err == nil || !strings.Contains(err.Error(), "not a gleaner index") {
		t.Errorf("missing index: %v", err)
	}
	_, err = run(t, "--backend", "cuda", "index", "info", dir)
	if err == nil || !strings.Contains(err.Error(), "tags cuda") {
		t.Errorf("--backend cuda without the tag: %v", err)
	}
	_, err = run(t, "import", "csv", dir, "-o", dir)
	if err == nil || !strings.Contains(err.Error(), "unknown format") {
		t.Errorf("unknown format: %v", err)
	}
}

// TestSciFactBM25 reproduces the published BM25 effectiveness on BEIR
// SciFact (Anserini flat 0.679, BEIR 0.665).
func TestSciFactBM25(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	src := testdata.Dataset(t, "beir_scifact")
	dir := t.TempDir()
	if _, err := run(t, "import", "beir", src, "-o", filepath.Join(dir, "c")); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "index", filepath.Join(dir, "c"), "-o", filepath.Join(dir, "ix"), "--dims", "64", "--train-head=false"); err != nil {
		t.Fatal(err)
	}
	rp := filepath.Join(dir, "r.json")
	if _, err := run(t, "eval", "--index", filepath.Join(dir, "ix"), "--method", "bm25", "--report", rp); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Methods []struct{ Metrics map[string]float64 } `json:"methods"`
	}
	b, _ := os.ReadFile(rp)
	json.Unmarshal(b, &rep)
	if n := rep.Methods[0].Metrics["ndcg@10"]; n < 0.655 || n > 0.695 {
		t.Errorf("SciFact BM25 nDCG@10 = %.4f, want within [0.655, 0.695]", n)
	}
}

func TestGraphBuildAndStats(t *testing.T) {
	dir := t.TempDir()
	c := synth.Generate(synth.Options{People: 60, Cities: 10, Countries: 3, Bands: 10, Queries: 20, Seed: 5})
	c.Edges = nil // the builders must find the links from the texts
	cdir, idir := filepath.Join(dir, "c"), filepath.Join(dir, "ix")
	corpus.Write(cdir, c)
	if _, err := run(t, "index", cdir, "-o", idir, "--dims", "16", "--train-head=false"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "eval", "--index", idir, "--method", "re2"); !errors.Is(err, index.ErrNoHead) || !strings.Contains(err.Error(), "gleaner train head") {
		t.Errorf("re2 without a head: %v", err)
	}
	out, err := run(t, "graph", "build", "--kind", "mentions", "--index", idir)
	if err != nil || !strings.Contains(out, "mentions graph:") {
		t.Fatalf("mentions: %v %s", err, out)
	}
	if _, err := run(t, "graph", "build", "--kind", "knn", "--index", idir); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "graph", "stats", "--index", idir, "--kind", "mentions", "--queries", filepath.Join(cdir, "queries.jsonl"))
	if err != nil || !strings.Contains(out, "within 2 hops") {
		t.Fatalf("stats: %v %s", err, out)
	}
	out, err = run(t, "eval", "--index", idir, "--method", "bm25,ppr-bm25", "--graph-kind", "mentions")
	if err != nil || !strings.Contains(out, "ppr-bm25") {
		t.Fatalf("eval ppr: %v %s", err, out)
	}
	if _, err := run(t, "graph", "build", "--kind", "citations", "--index", idir); err == nil {
		t.Error("unknown graph kind accepted")
	}
}

func TestTransformerModels(t *testing.T) {
	dir := t.TempDir()
	c := synth.Generate(synth.Options{People: 30, Cities: 6, Countries: 2, Bands: 6, Queries: 6, Seed: 9})
	cdir, idir := filepath.Join(dir, "c"), filepath.Join(dir, "ix")
	corpus.Write(cdir, c)
	bi, ce := filepath.Join(dir, "bi"), filepath.Join(dir, "ce")
	if out, err := run(t, "model", "random", "-o", bi, "--corpus", cdir, "--cross=false"); err != nil || !strings.Contains(out, "head false") {
		t.Fatalf("bi-encoder: %v %s", err, out)
	}
	if _, err := run(t, "model", "random", "-o", ce, "--corpus", cdir); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "index", cdir, "-o", idir, "--bi-encoder", bi, "--train-head=false", "--tokenizer", filepath.Join(ce, "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "eval", "--index", idir, "--bi-encoder", bi, "--method", "vector,re2", "--model", ce)
	if err != nil || !strings.Contains(out, "re2") || !strings.Contains(out, "vector") {
		t.Fatalf("eval with models: %v %s", err, out)
	}
	if _, err := run(t, "eval", "--index", idir, "--method", "vector"); err == nil || !strings.Contains(err.Error(), "--bi-encoder") {
		t.Errorf("vector search on a bi-encoder index without --bi-encoder: %v", err)
	}
}

// TestDeviceAndPrecisionFlags: --device only with --backend cuda and ≥ 0;
// --precision parsed, and refused without a --model cross-encoder;
// encoder shapes of model random bounded; each error names its flag
// before any index is read or folder written.
func TestDeviceAndPrecisionFlags(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-index")
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--device", "1", "query", "--index", missing, "q"}, "--device"},
		{[]string{"--device", "-1", "--backend", "cuda", "query", "--index", missing, "q"}, "--device"},
		{[]string{"query", "--index", missing, "--precision", "fp16", "q"}, "--precision"},
		{[]string{"query", "--index", missing, "--precision", "bf16", "q"}, "--precision"},
		{[]string{"model", "random", "-o", missing, "--intermediate", "0"}, "--intermediate"},
		{[]string{"model", "random", "-o", missing, "--intermediate", "99999999999"}, "--intermediate"},
		{[]string{"model", "random", "-o", missing, "--hidden", "-4"}, "--hidden"},
	} {
		out, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%v: %v, want an error naming %s\n%s", c.args, err, c.flag, out)
		}
	}
}
