package store

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The debris of a killed write (an unlocked hidden folder) is removed by
// the next run; a folder another writer still holds is kept.
func TestCleanDebrisKeepsLiveWrites(t *testing.T) {
	base := t.TempDir()
	final := filepath.Join(base, "ix")
	dead := []string{filepath.Join(base, ".ix.tmp-111"), filepath.Join(base, ".ix.staging-222"), filepath.Join(base, "..ix.staging-333.tmp-444")}
	for _, d := range dead {
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w, err := NewWriter(final) // a write in progress: its folder is locked
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(base, ".ixother.tmp-1") // another index's: not ours to touch
	os.Mkdir(other, 0o755)
	removed, busy := CleanDebris(final)
	slices.Sort(dead)
	if !slices.Equal(removed, dead) {
		t.Errorf("removed %v, want %v", removed, dead)
	}
	if len(busy) != 1 || busy[0] != w.tmp {
		t.Errorf("busy %v, want the live writer's %s", busy, w.tmp)
	}
	if _, err := os.Stat(w.tmp); err != nil {
		t.Fatalf("the live write's folder is gone: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another index's folder was touched: %v", err)
	}
	w.F32("a.f32", []float32{1})
	if err := w.Commit(nil); err != nil {
		t.Fatalf("the live write could not finish: %v", err)
	}
	if removed, busy := CleanDebris(final); len(removed)+len(busy) != 0 {
		t.Errorf("after the commit: removed %v, busy %v", removed, busy)
	}
}

// TestDebrisWithUserFilesKept keeps a hidden folder that holds a complete
// store plus files its manifest does not list (the user's, stranded by a
// crash midway through ReplaceDir).
func TestDebrisWithUserFilesKept(t *testing.T) {
	parent := t.TempDir()
	final := filepath.Join(parent, "ix")
	stranded := filepath.Join(parent, ".ix.staging-1")
	if err := os.MkdirAll(stranded, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(stranded, ManifestFile), []byte(`{"files": {"a.bin": {}}}`), 0o644)
	os.WriteFile(filepath.Join(stranded, "a.bin"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(stranded, "notes.txt"), []byte("mine"), 0o644)
	removed, busy := CleanDebris(final)
	if len(removed) != 0 || len(busy) != 1 {
		t.Fatalf("removed %v, kept %v: want the folder kept", removed, busy)
	}
	os.Remove(filepath.Join(stranded, "notes.txt"))
	if removed, _ := CleanDebris(final); len(removed) != 1 {
		t.Fatalf("without the user's file: removed %v, want the folder", removed)
	}
}
