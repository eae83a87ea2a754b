package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTriGraphCLI builds a Tri-Graph, evaluates both methods with a preset
// and a flag over it, prints the stats, and refuses bad settings with
// errors naming the flag, leaving the index usable.
func TestTriGraphCLI(t *testing.T) {
	cdir, idir := buildFullIndex(t, t.TempDir(), 3) // has a titles Tri-Graph
	out, err := run(t, "eval", "--index", idir, "--method", "nexusrag,linearrag", "--preset", "musique", "--eta", "2", "--columns", "recall@5")
	if err != nil || !strings.Contains(out, "nexusrag") || !strings.Contains(out, "linearrag") {
		t.Fatalf("eval: %v\n%s", err, out)
	}
	out, err = run(t, "graph", "stats", "--kind", "trigraph", "--index", idir, "--queries", filepath.Join(cdir, "queries.jsonl"), "--limit", "5")
	if err != nil || !strings.Contains(out, "entities") || !strings.Contains(out, "gold passages") || !strings.Contains(out, "pagerank") {
		t.Fatalf("stats: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"graph", "build", "--kind", "trigraph", "--index", idir, "--ner", "spacy"}, "--ner"},
		{[]string{"graph", "build", "--kind", "trigraph", "--index", idir, "--workers", "0"}, "workers"},
		{[]string{"graph", "build", "--kind", "trigraph", "--index", idir, "--tau", "2"}, "--tau 2: want a value in [0, 1]"},
		{[]string{"graph", "build", "--kind", "trigraph", "--index", idir, "--kappa", "-1"}, "--kappa -1: want ≥ 1"},
		{[]string{"eval", "--index", idir, "--method", "nexusrag", "--preset", "squad"}, "--preset"},
		{[]string{"eval", "--index", idir, "--method", "nexusrag", "--tg-damping", "1"}, "damping"},
		{[]string{"eval", "--index", idir, "--method", "linearrag", "--passage-scores", "dense"}, "--passage-scores dense: want one of"},
		{[]string{"eval", "--index", idir, "--method", "nexusrag", "--max-iter", "0"}, "--max-iter 0: want ≥ 1"},
		{[]string{"eval", "--index", idir, "--method", "nexusrag", "--passage-weight", "1e307"}, "--passage-weight 1e+307: want a value in [0, 1e+06]"},
		{[]string{"graph", "build", "--kind", "knn", "--index", idir, "--ner", "prose"}, "--ner applies to --kind ketrag, trigraph"},
		{[]string{"graph", "build", "--kind", "trigraph", "--index", idir, "--k-lex", "3"}, "--k-lex applies to --kind ketrag, knn"},
		{[]string{"graph", "stats", "--kind", "bogus", "--index", idir}, "graph kinds"},
	} {
		if _, err := run(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
	if out, err := run(t, "eval", "--index", idir, "--method", "nexusrag", "--columns", "recall@5"); err != nil {
		t.Fatalf("the index no longer works after refused builds: %v\n%s", err, out)
	}
}

func TestTriGraphMissing(t *testing.T) {
	dir := t.TempDir()
	cdir, _ := buildFullIndex(t, dir, 5)
	idir := filepath.Join(dir, "plain")
	if _, err := run(t, "index", cdir, "-o", idir, "--dims", "8", "--train-head=false"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"eval", "--index", idir, "--method", "nexusrag"},
		{"graph", "stats", "--kind", "trigraph", "--index", idir},
	} {
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), "--kind trigraph") {
			t.Errorf("%v without a tri-graph: %v, want the command that builds one", args, err)
		}
	}
}
