package corpus

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteThroughDotDot: a target spelled through itself ("c/../c") is
// replaced like any other, never lost.
func TestWriteThroughDotDot(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "c")
	first := &Corpus{Nodes: []Node{{ID: "a", Text: "one"}}}
	if err := Write(dir, first); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	if err := Write(dir+string(filepath.Separator)+".."+string(filepath.Separator)+"c", &Corpus{Nodes: []Node{{ID: "b", Text: "two"}}}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir, ReadOptions{})
	if err != nil || c.Nodes[0].ID != "b" {
		t.Fatalf("after the rewrite: %v %+v", err, c)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) != "mine" {
		t.Fatal("the user's file was lost")
	}
}
