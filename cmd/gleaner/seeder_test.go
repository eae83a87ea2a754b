package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/internal/testdata"
)

// TestTrainSeederCommand imports PQ-2H, trains a small encoder on a
// sample for one epoch, and evaluates method seeder; bad settings are
// refused with the flag's name.
func TestTrainSeederCommand(t *testing.T) {
	src := testdata.Dataset(t, "pathquestion")
	dir := t.TempDir()
	cdir, idir := filepath.Join(dir, "pq"), filepath.Join(dir, "idx")
	if out, err := run(t, "import", "pathquestion", src, "--set", "PQ-2H", "-o", cdir); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	if out, err := run(t, "index", cdir, "-o", idir, "--train-head=false", "--dims", "64"); err != nil {
		t.Fatalf("index: %v\n%s", err, out)
	}
	out, err := run(t, "eval", "--index", idir, "--method", "seeder")
	if err == nil || !strings.Contains(err.Error(), "train seeder") {
		t.Fatalf("seeder before training: %v\n%s", err, out)
	}
	badDev := filepath.Join(dir, "dev.jsonl")
	os.WriteFile(badDev, []byte(`{"id":"q1","text":"who is x","gold":["no_such_entity"]}`+"\n"), 0o644)
	for _, bad := range [][]string{{"--epochs", "0"}, {"--hidden", "30", "--heads", "4"}, {"--khop-quotas", "2,x"}, {"--k0", "0"},
		{"--samples", "1"}, {"--samples", "5000"}, {"--pca", "65"}, {"--lr", "0"}, {"--max-train", "-1"}, {"--dev", badDev}} {
		out, err := run(t, append([]string{"train", "seeder", "--index", idir}, bad...)...)
		if err == nil {
			t.Fatalf("train seeder %v accepted:\n%s", bad, out)
		}
		if name := strings.TrimPrefix(bad[len(bad)-2], "--"); name != "dev" && name != "khop-quotas" && !strings.Contains(err.Error(), bad[len(bad)-2]) && !strings.Contains(err.Error(), "PCA") && !strings.Contains(err.Error(), "epochs") {
			t.Errorf("train seeder %v: the error does not name the flag: %v", bad, err)
		}
	}
	out, err = run(t, "train", "seeder", "--index", idir, "--max-train", "64", "--epochs", "1", "--pca", "16", "--hidden", "8", "--heads", "2", "--layers", "1")
	// the kept epoch may be 0: the untrained encoder ranks by the text side
	if err != nil || !strings.Contains(out, "epoch 1/1") || !strings.Contains(out, "dev recall@20") || !regexp.MustCompile(`kept epoch [01] `).MatchString(out) {
		t.Fatalf("train seeder: %v\n%s", err, out)
	}
	out, err = run(t, "eval", "--index", idir, "--method", "kg-khop,seeder", "--columns", "hit@1,recall@20", "--cutoffs", "1,20")
	if err != nil || !strings.Contains(out, "seeder") {
		t.Fatalf("eval seeder: %v\n%s", err, out)
	}
}
