package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The first hour, as a newcomer meets it: help, errors and output.
func TestFirstHour(t *testing.T) {
	dir := t.TempDir()
	_, idir := buildFullIndex(t, dir, 11)

	for _, c := range []struct{ args []string }{
		{[]string{"import", "--help"}}, {[]string{"index", "--help"}}, {[]string{"query", "--help"}},
		{[]string{"eval", "--help"}}, {[]string{"graph", "build", "--help"}}, {[]string{"train", "head", "--help"}},
		{[]string{"model", "random", "--help"}}, {[]string{"demo", "--help"}}, {[]string{"graph", "stats", "--help"}},
	} {
		out, err := run(t, c.args...)
		if err != nil || !strings.Contains(out, "Examples:") {
			t.Errorf("%v: no examples in the help (%v)", c.args, err)
		}
		if strings.Contains(out, "--train-head gleaner") {
			t.Errorf("%v: a backtick became a value name", c.args)
		}
	}
	if out, err := run(t, "--version"); err != nil || !strings.Contains(out, "go1.") {
		t.Errorf("--version: %v %q", err, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"graph", "bild"}, `did you mean "build"`},
		{[]string{"eval", "--index", idir, "--methd", "bm25"}, "did you mean --method"},
		{[]string{"index", "info"}, "needs the index folder"},
		{[]string{"query", "--index", idir, "--graph-kind", "kn", "--method", "ppr", "x"}, `did you mean "knn"`},
		{[]string{"train", "head", "--index", idir, "--restore-previous"}, "no previous head"},
	} {
		_, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want %q", c.args, err, c.want)
		}
	}

	// Retraining says what it replaced and keeps it recoverable.
	out, err := run(t, "train", "head", "--index", idir, "--pseudo", "300", "--epochs", "3")
	if err != nil || !strings.Contains(out, "replaced the previous head") {
		t.Fatalf("train head: %v\n%s", err, out)
	}
	if out, err := run(t, "train", "head", "--index", idir, "--restore-previous"); err != nil || !strings.Contains(out, "restored the previous head") {
		t.Errorf("restore: %v\n%s", err, out)
	}
	if out, err := run(t, "index", "info", idir); err != nil || !strings.Contains(out, "head ") || strings.Contains(out, "map[") {
		t.Errorf("index info: %v\n%s", err, out)
	}

	// Reports and runs are readable by all; run files have no timing.
	report := filepath.Join(dir, "out", "r.json")
	if _, err := run(t, "eval", "--index", idir, "--method", "bm25", "--report", report); err != nil {
		t.Fatal(err)
	}
	run1 := filepath.Join(dir, "out", "r.runs", "bm25.trec")
	for _, p := range []string{report, run1, filepath.Join(idir, "vectors.f32"), filepath.Join(dir, "corpus", "nodes.jsonl")} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want 0644 (%v)", p, st.Mode().Perm(), err)
		}
	}
	out, err = run(t, "eval", "--index", idir, "--method", "bm25", "--run-file", run1)
	if err != nil || !strings.Contains(out, "run:bm25.trec") || !strings.Contains(out, " -  ") {
		t.Errorf("--run-file row: %v\n%s", err, out)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	a, b := strings.Fields(rows[1]), strings.Fields(rows[2])
	if strings.Join(a[1:7], " ") != strings.Join(b[1:7], " ") {
		t.Errorf("gleaner's own run scores differently from the method:\n%s\n%s", rows[1], rows[2])
	}
}

// TestSharedFlagHelp: a flag that several components read says what each
// reads it as, and a usage another already says is not repeated.
func TestSharedFlagHelp(t *testing.T) {
	out, err := run(t, "graph", "build", "--help")
	if err != nil {
		t.Fatal(err)
	}
	var seed string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "--seed ") {
			seed = l
		}
	}
	for _, want := range []string{"hnsw: seed of the layer draws", "ivf: seed of the training sample", "(default: each one's own)"} {
		if !strings.Contains(seed, want) {
			t.Errorf("--seed's help %q does not say %q", seed, want)
		}
	}
	got := addUsage(addUsage(addUsage(nil, "workers"), "a: workers (b: default 2)"), "a: workers")
	if len(got) != 1 || got[0] != "a: workers (b: default 2)" {
		t.Errorf("usages %q, want the one that says the others", got)
	}
	got = addUsage([]string{"x", "seed", "y", "lists"}, "seed and lists")
	if !slices.Equal(got, []string{"x", "seed and lists", "y"}) {
		t.Errorf("usages %q, want both that the new one says replaced by it", got)
	}
}
