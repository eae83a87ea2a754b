package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/retrieve"
)

// The example wiki (examples/wiki: 61 pages that link to each other, with
// 48 multi-hop questions split into dev and test) through the path a new
// user takes: import files, index, graph, tune on dev, eval on test.
func TestOwnDocumentsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	data, idx, profile := filepath.Join(dir, "wiki"), filepath.Join(dir, "idx"), filepath.Join(dir, "wiki.profile.json")
	out, err := run(t, "import", "files", "../../examples/wiki", "-o", data)
	if err != nil {
		t.Fatal(err, out)
	}
	// The fixture has 57 Markdown, 2 HTML and 2 text pages, 4 links to
	// pages that do not exist and 6 links to URLs.
	for _, want := range []string{"read 61 documents", "320 passages", "268 link edges", "6 links to URLs dropped", "4 dangling links",
		"people/wendell-marsh.md:5 → projects/bramble", "projects/atlas.md:30 → ../projects/atlas-v0.md"} {
		if !strings.Contains(out, want) {
			t.Fatalf("import report lacks %q:\n%s", want, out)
		}
	}
	if out, err := run(t, "index", data, "-o", idx); err != nil {
		t.Fatal(err, out)
	}
	if out, err := run(t, "graph", "build", "--kind", "mentions", "--index", idx); err != nil {
		t.Fatal(err, out)
	}
	out, err = run(t, "tune", "--index", idx, "--queries", "../../examples/wiki-questions/dev.jsonl", "--group-by", "document", "-o", profile)
	if err != nil {
		t.Fatal(err, out)
	}
	if !strings.Contains(out, "24 questions, 4 folds, recall@5") || !strings.Contains(out, "chosen: ") {
		t.Fatalf("tune output:\n%s", out)
	}
	if _, err := run(t, "tune", "--index", idx, "--queries", "../../examples/wiki-questions/dev.jsonl", "-o", profile); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("tune replaced a profile without --force: %v", err)
	}
	p, err := retrieve.ReadProfile(profile)
	if err != nil || p.GroupBy != retrieve.GroupDocument || p.Tuned.N != 24 {
		t.Fatalf("profile %+v: %v", p, err)
	}
	test := "../../examples/wiki-questions/test.jsonl"
	base, err := run(t, "eval", "--index", idx, "--queries", test, "--group-by", "document", "--method", "bm25,auto", "--columns", "recall@5")
	if err != nil {
		t.Fatal(err, base)
	}
	tuned, err := run(t, "eval", "--index", idx, "--queries", test, "--profile", profile, "--columns", "recall@5")
	if err != nil {
		t.Fatal(err, tuned)
	}
	t.Logf("held-out questions:\n%s%s", base, tuned)
	bm25, auto, prof := recallOf(t, base, "bm25"), recallOf(t, base, "ppr"), recallOf(t, tuned, p.Method)
	// Recorded 2026-12-02 (benchmarks/RESULTS.md): bm25 0.889, the default 0.882, the profile 0.861 on
	// the held-out questions; on dev the profile 0.899 against bm25's 0.816. 24 questions are noisy:
	// these bounds catch a broken import or ranking, not a change of a question or two.
	if bm25 < 0.8 || auto < 0.8 || prof < 0.8 || p.Tuned.Dev < 0.85 {
		t.Fatalf("recall@5: held-out bm25 %.3f, default ppr %.3f, profile %s %.3f; profile on dev %.3f", bm25, auto, p.Method, prof, p.Tuned.Dev)
	}
	if _, err := run(t, "eval", "--index", idx, "--queries", test, "--method", "bm25"); err == nil || !strings.Contains(err.Error(), "--group-by document") {
		t.Fatalf("document gold judged against passages: %v", err)
	}
	q, err := run(t, "query", "--index", idx, "--group-by", "document", "-k", "3", "Who leads the team that owns the ledger?")
	if err != nil || !strings.Contains(q, "best passage") {
		t.Fatalf("query: %v\n%s", err, q)
	}
}

// recallOf reads a method's recall@5 from an eval table.
func recallOf(t *testing.T, table, method string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(method) + `\s+([0-9.]+)`).FindStringSubmatch(table)
	if m == nil {
		t.Fatalf("no row for %s in\n%s", method, table)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func TestImportFilesRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "ok.md"), []byte("# Ok\n\ntext\n"), 0o644)
	big := filepath.Join(src, "huge.txt")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil { // a 1 GiB single "line", sparse on disk
		t.Fatal(err)
	}
	f.Close()
	out := filepath.Join(dir, "out")
	if _, err := run(t, "import", "files", src, "-o", out); err == nil || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("a 1 GiB file: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatal("a failed import wrote its output folder")
	}
	report, err := run(t, "import", "files", src, "--skip-invalid", "-o", out)
	if err != nil || !strings.Contains(report, "skipped 1 bad files") || !strings.Contains(report, "huge.txt") {
		t.Fatalf("--skip-invalid: %v\n%s", err, report)
	}
	for _, bad := range [][]string{{"--max-words", "0"}, {"--min-words", "-1"}, {"--max-file-bytes", "0"}, {"--exclude", "[x"}} {
		if _, err := run(t, append([]string{"import", "files", src, "-o", filepath.Join(dir, "o2")}, bad...)...); err == nil {
			t.Fatalf("%v accepted", bad)
		}
	}
	b, _ := os.ReadFile(filepath.Join(out, "nodes.jsonl"))
	var n struct{ ID string }
	if json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &n) != nil || n.ID != "ok.md#1" {
		t.Fatalf("nodes.jsonl: %s", b)
	}
	// Questions written into the corpus folder are not removed by a new import.
	os.WriteFile(filepath.Join(out, "queries.jsonl"), []byte(`{"id":"q","text":"x","gold":["ok.md"]}`+"\n"), 0o644)
	if _, err := run(t, "import", "files", src, "--skip-invalid", "-o", out); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("re-import over questions: %v", err)
	}
	if _, err := run(t, "import", "files", src, "--skip-invalid", "--force", "-o", out); err != nil {
		t.Fatalf("--force: %v", err)
	}
}

// A folder too small to train the reranking head says which flag builds
// the index without one.
func TestTinyFolderNamesTheHeadFlag(t *testing.T) {
	dir := t.TempDir()
	src, data := filepath.Join(dir, "docs"), filepath.Join(dir, "data")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "a.md"), []byte("# A\n\nalpha beta gamma\n"), 0o644)
	os.WriteFile(filepath.Join(src, "b.md"), []byte("# B\n\nbeta delta\n"), 0o644)
	if out, err := run(t, "import", "files", src, "-o", data); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	_, err := run(t, "index", data, "-o", filepath.Join(dir, "ix"))
	if err == nil || !strings.Contains(err.Error(), "--train-head=false") || strings.Contains(err.Error(), "index.WithoutHead") {
		t.Fatalf("a two-file folder: %v", err)
	}
	if out, err := run(t, "index", data, "-o", filepath.Join(dir, "ix"), "--train-head=false"); err != nil {
		t.Fatalf("--train-head=false: %v %s", err, out)
	}
}
