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

// TestReplaceDirKeepsUserFilesAtEveryStep looks at what a kill -9 would
// leave at each point ReplaceDir passes (after the user's entries are
// linked into the new folder, after the swap): final holds the user's
// files, and the next run's CleanDebris removes the hidden folder (its
// entries are links of final's, not the only copies) without touching them.
func TestReplaceDirKeepsUserFilesAtEveryStep(t *testing.T) {
	parent := t.TempDir()
	final := filepath.Join(parent, "ix")
	writeOneFileStore(t, final, "old")
	os.WriteFile(filepath.Join(final, "notes.txt"), []byte("mine"), 0o644)
	os.MkdirAll(filepath.Join(final, "drafts", "deep"), 0o755)
	os.WriteFile(filepath.Join(final, "drafts", "deep", "d.txt"), []byte("draft"), 0o644)
	os.Symlink("notes.txt", filepath.Join(final, "link"))
	var steps []string
	replaceStep = func(step string) {
		steps = append(steps, step)
		assertUserFiles(t, final)
		hidden := Debris(final)
		if len(hidden) != 1 {
			t.Fatalf("at %s: hidden folders %v, want the one being swapped", step, hidden)
		}
		// What the next run would do after a kill here, short of removing.
		if holdsForeign(hidden[0], final) {
			t.Errorf("at %s: the hidden folder would be kept as holding the only copy of the user's files", step)
		}
	}
	defer func() { replaceStep = func(string) {} }()
	for i, body := range []string{"new", "newer"} {
		src := filepath.Join(parent, ".ix.staging-"+body)
		writeOneFileStore(t, src, body)
		if err := ReplaceDir(src, final, func(name string) bool { return name == "a.bin" || name == ManifestFile }); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(filepath.Join(final, "a.bin")); string(got) != body {
			t.Errorf("rewrite %d: final holds %q, want %q", i, got, body)
		}
	}
	if !slices.Equal(steps, []string{"linked", "swapped", "linked", "swapped"}) {
		t.Errorf("steps %v", steps)
	}
	assertUserFiles(t, final)
	if d := Debris(final); len(d) != 0 {
		t.Errorf("debris left: %v", d)
	}
}

// A dead hidden folder holding links of final's user files is removed by
// CleanDebris, and final's files stay.
func TestDebrisOfLinkedUserFilesRemoved(t *testing.T) {
	parent := t.TempDir()
	final, src := filepath.Join(parent, "ix"), filepath.Join(parent, ".ix.staging-1")
	writeOneFileStore(t, final, "old")
	writeOneFileStore(t, src, "new")
	os.WriteFile(filepath.Join(final, "notes.txt"), []byte("mine"), 0o644)
	os.MkdirAll(filepath.Join(final, "drafts", "deep"), 0o755)
	os.WriteFile(filepath.Join(final, "drafts", "deep", "d.txt"), []byte("draft"), 0o644)
	os.Symlink("notes.txt", filepath.Join(final, "link"))
	if !linkEntries(final, src, []string{"drafts", "link", "notes.txt"}) {
		t.Skip("this file system has no hard links")
	}
	removed, busy := CleanDebris(final)
	if len(removed) != 1 || len(busy) != 0 {
		t.Fatalf("removed %v, kept %v: want the hidden folder removed", removed, busy)
	}
	assertUserFiles(t, final)
}

// A hidden folder whose user files are not all links of final's (one more
// file in a linked folder) is kept.
func TestDebrisWithOneUnlinkedFileKept(t *testing.T) {
	parent := t.TempDir()
	final, src := filepath.Join(parent, "ix"), filepath.Join(parent, ".ix.staging-1")
	writeOneFileStore(t, final, "old")
	writeOneFileStore(t, src, "new")
	os.MkdirAll(filepath.Join(final, "drafts"), 0o755)
	os.WriteFile(filepath.Join(final, "drafts", "d.txt"), []byte("draft"), 0o644)
	if !linkEntries(final, src, []string{"drafts"}) {
		t.Skip("this file system has no hard links")
	}
	os.WriteFile(filepath.Join(src, "drafts", "only-here.txt"), []byte("x"), 0o644)
	if removed, busy := CleanDebris(final); len(removed) != 0 || len(busy) != 1 {
		t.Fatalf("removed %v, kept %v: want the folder kept", removed, busy)
	}
}

// writeOneFileStore makes dir a complete one-file store whose file holds body.
func writeOneFileStore(t *testing.T, dir, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"format": "`+FormatName+`", "files": {"a.bin": {}}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "a.bin"), []byte(body), 0o644)
}

func assertUserFiles(t *testing.T, final string) {
	t.Helper()
	for name, want := range map[string]string{"notes.txt": "mine", "drafts/deep/d.txt": "draft", "link": "mine"} {
		if got, err := os.ReadFile(filepath.Join(final, name)); err != nil || string(got) != want {
			t.Errorf("%s at final: %q, %v; want %q", name, got, err, want)
		}
	}
}
