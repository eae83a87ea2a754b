package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// writeNotes writes n small linked Markdown notes into dir.
func writeNotes(t *testing.T, dir string, from, to int) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	for i := from; i <= to; i++ {
		text := fmt.Sprintf("# Note %d\n\nThis note is about topic%d and gardening. See [next](note%d.md).\n\n## Details\n\nCompost number %d and worms.\n", i, i, i+1, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("note%d.md", i)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAddDeleteFiles adds, replaces and deletes documents of a folder in
// place: queries see them, unchanged files are skipped, links follow, and
// refusals change nothing.
func TestAddDeleteFiles(t *testing.T) {
	dir := t.TempDir()
	notes, cdir, idir := filepath.Join(dir, "notes"), filepath.Join(dir, "corpus"), filepath.Join(dir, "index")
	writeNotes(t, notes, 1, 8)
	if out, err := run(t, "import", "files", notes, "-o", cdir); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	if out, err := run(t, "index", cdir, "-o", idir, "--train-head=false"); err != nil {
		t.Fatalf("index: %v\n%s", err, out)
	}
	writeNotes(t, notes, 9, 9)
	if err := os.WriteFile(filepath.Join(notes, "note3.md"), []byte("# Note 3\n\nRewritten: beekeeping only. See [one](note1.md).\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "add", "files", notes, "--index", idir)
	if err == nil || !strings.Contains(err.Error(), "nothing was added") || !strings.Contains(err.Error(), "--replace") {
		t.Fatalf("add over existing documents: %v\n%s", err, out)
	}
	out, err = run(t, "add", "files", notes, "--index", idir, "--replace")
	if err != nil || !strings.Contains(out, "1 added, 2 replaced (5 passages written), 6 unchanged") {
		t.Fatalf("add --replace: %v\n%s", err, out) // note8 gains its link to note9
	}
	out, err = run(t, "query", "--index", idir, "--method", "bm25", "-k", "2", "beekeeping")
	if err != nil || !strings.Contains(out, "note3.md#1") {
		t.Fatalf("query after replace: %v\n%s", err, out)
	}
	out, err = run(t, "query", "--index", idir, "--method", "bm25", "-k", "3", "topic9")
	if err != nil || !strings.Contains(out, "note9.md#1") {
		t.Fatalf("query after add: %v\n%s", err, out)
	}
	out, err = run(t, "delete", "note5.md", "nope.md", "--index", idir)
	if err == nil || !strings.Contains(err.Error(), `no document "nope.md"`) {
		t.Fatalf("delete of a missing id: %v\n%s", err, out)
	}
	out, err = run(t, "delete", "note5.md", "nope.md", "--missing-ok", "--index", idir)
	if err != nil || !strings.Contains(out, "1 deleted") {
		t.Fatalf("delete --missing-ok: %v\n%s", err, out)
	}
	out, err = run(t, "query", "--index", idir, "--method", "bm25", "-k", "3", "topic5")
	if err != nil || strings.Contains(out, "note5.md") {
		t.Fatalf("deleted document still found: %v\n%s", err, out)
	}
	out, err = run(t, "index", "info", idir)
	if err != nil || !strings.Contains(out, "up to record 2") || !strings.Contains(out, "6 (relations 1, graph kinds [links])") {
		t.Fatalf("info: %v\n%s", err, out)
	}
	out, err = run(t, "checkpoint", "--index", idir)
	if err != nil || !strings.Contains(out, "replayed 0 log records") {
		t.Fatalf("checkpoint: %v\n%s", err, out)
	}
}

func TestAddJSONLRefusals(t *testing.T) {
	dir := t.TempDir()
	notes, cdir, idir := filepath.Join(dir, "notes"), filepath.Join(dir, "corpus"), filepath.Join(dir, "index")
	writeNotes(t, notes, 1, 4)
	run(t, "import", "files", notes, "-o", cdir)
	if out, err := run(t, "index", cdir, "-o", idir, "--train-head=false"); err != nil {
		t.Fatalf("index: %v\n%s", err, out)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	for name, tc := range map[string]struct{ body, want string }{
		"no text":     {`{"id":"x"}`, "text"},
		"broken json": {`{"id":"x", "text": `, bad},
		"empty id":    {`{"id":"","text":"t"}`, "id"},
	} {
		os.WriteFile(bad, []byte(tc.body+"\n"), 0o644)
		out, err := run(t, "add", "jsonl", bad, "--index", idir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
	for _, args := range [][]string{
		{"add", "jsonl", bad},
		{"add", "pdf", bad, "--index", idir},
		{"add", "jsonl", bad, "--index", idir, "--batch", "0"},
		{"delete", "--index", idir},
	} {
		if out, err := run(t, args...); err == nil {
			t.Errorf("%v accepted\n%s", args, out)
		}
	}
	good := filepath.Join(dir, "good.jsonl")
	os.WriteFile(good, []byte(`{"id":"n1","title":"Worm farm","text":"vermicompost and worms"}`+"\n"), 0o644)
	out, err := run(t, "add", "jsonl", good, "--index", idir)
	if err != nil || !strings.Contains(out, "1 added") {
		t.Fatalf("add jsonl: %v\n%s", err, out)
	}
}

// gleaner refresh builds the HNSW graph an add left stale, and says when
// there is nothing to do.
func TestRefreshCommand(t *testing.T) {
	dir := t.TempDir()
	notes, cdir, idir := filepath.Join(dir, "notes"), filepath.Join(dir, "corpus"), filepath.Join(dir, "index")
	writeNotes(t, notes, 1, 8)
	for _, args := range [][]string{{"import", "files", notes, "-o", cdir}, {"index", cdir, "-o", idir, "--train-head=false"},
		{"graph", "build", "--kind", "hnsw", "--index", idir, "--m", "4"}} {
		if out, err := run(t, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	out, err := run(t, "refresh", "--index", idir)
	if err != nil || !strings.Contains(out, "nothing to build again") {
		t.Fatalf("refresh of an index never changed: %v\n%s", err, out)
	}
	if _, err := os.Stat(idir + ".wal"); !os.IsNotExist(err) {
		t.Fatalf("refresh with nothing to do left an update log: %v", err)
	}
	more := filepath.Join(dir, "more")
	writeNotes(t, more, 9, 9)
	out, err = run(t, "add", "files", more, "--index", idir)
	if err != nil || !strings.Contains(out, "stale until built again: sections [hnsw]") || !strings.Contains(out, "gleaner refresh --index") {
		t.Fatalf("add: %v\n%s", err, out)
	}
	out, err = run(t, "refresh", "--index", idir)
	if err != nil || !strings.Contains(out, "built again: hnsw") || strings.Contains(out, "stale") {
		t.Fatalf("refresh: %v\n%s", err, out)
	}
	out, err = run(t, "index", "info", idir)
	if err != nil || strings.Contains(out, "stale") || !regexp.MustCompile(`section hnsw .*: ok`).MatchString(out) {
		t.Fatalf("info after refresh: %v\n%s", err, out)
	}
	out, err = run(t, "refresh", "--index", idir)
	if err != nil || !strings.Contains(out, "nothing to build again") {
		t.Fatalf("second refresh: %v\n%s", err, out)
	}
	out, err = run(t, "index", "refit", "--index", idir)
	if err != nil || !strings.Contains(out, "refitted LSA:") || !strings.Contains(out, "built again: hnsw") || strings.Contains(out, "stale") {
		t.Fatalf("index refit: %v\n%s", err, out)
	}
}
