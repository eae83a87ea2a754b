package store

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	removed, _, busy := CleanDebris(final)
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
	if removed, _, busy := CleanDebris(final); len(removed)+len(busy) != 0 {
		t.Errorf("after the commit: removed %v, busy %v", removed, busy)
	}
}

// TestDebrisWithUserFilesKept keeps a hidden folder that holds a complete
// store plus files its manifest does not list (the user's, stranded by a
// crash midway through ReplaceDir) while there is no index folder to move
// them into; once there is, they are moved back and the folder removed.
func TestDebrisWithUserFilesKept(t *testing.T) {
	parent := t.TempDir()
	final := filepath.Join(parent, "ix")
	stranded := filepath.Join(parent, ".ix.staging-1")
	writeOneFileStore(t, stranded, "old")
	os.WriteFile(filepath.Join(stranded, "notes.txt"), []byte("mine"), 0o644)
	removed, restored, busy := CleanDebris(final)
	if len(removed)+len(restored) != 0 || len(busy) != 1 {
		t.Fatalf("no index folder: removed %v, restored %v, kept %v: want the folder kept", removed, restored, busy)
	}
	writeOneFileStore(t, final, "new")
	removed, restored, busy = CleanDebris(final)
	if len(removed) != 1 || len(busy) != 0 || len(restored) != 1 {
		t.Fatalf("removed %v, restored %v, kept %v: want notes.txt moved back and the folder removed", removed, restored, busy)
	}
	if got, _ := os.ReadFile(filepath.Join(final, "notes.txt")); string(got) != "mine" {
		t.Errorf("notes.txt at final: %q", got)
	}
}

// userFiles puts the user's entries into an index folder: a file, a
// sub-folder with a file two levels down, a symbolic link, and a file to
// delete.
func userFiles(t *testing.T, final string) {
	t.Helper()
	os.WriteFile(filepath.Join(final, "notes.txt"), []byte("mine"), 0o644)
	os.MkdirAll(filepath.Join(final, "drafts", "deep"), 0o750)
	os.WriteFile(filepath.Join(final, "drafts", "deep", "d.txt"), []byte("draft"), 0o644)
	os.Symlink("notes.txt", filepath.Join(final, "link"))
}

func assertUserFiles(t *testing.T, final string, names ...string) {
	t.Helper()
	want := map[string]string{"notes.txt": "mine", "drafts/deep/d.txt": "draft", "link": "mine"}
	if len(names) == 0 {
		names = []string{"notes.txt", "drafts/deep/d.txt", "link"}
	}
	for _, name := range names {
		if got, err := os.ReadFile(filepath.Join(final, name)); err != nil || string(got) != want[name] {
			t.Errorf("%s at final: %q, %v; want %q", name, got, err, want[name])
		}
	}
}

var ownsA = func(name string) bool { return name == "a.bin" || name == ManifestFile }

// TestReplaceDirKeepsUserFilesAtEveryStep looks at what a kill -9 would
// leave at each point ReplaceDir passes: after the user's files are linked
// into the new folder, and after the swap. Files are at final at both;
// the sub-folder is at final or in the hidden folder, and the next run's
// CleanDebris (run on a copy of that moment) moves it back and removes the
// hidden folder. The sub-folder keeps its mode and identity throughout.
func TestReplaceDirKeepsUserFilesAtEveryStep(t *testing.T) {
	parent := t.TempDir()
	final := filepath.Join(parent, "ix")
	writeOneFileStore(t, final, "old")
	userFiles(t, final)
	drafts, _ := os.Stat(filepath.Join(final, "drafts"))
	var steps []string
	replaceStep = func(step string) {
		steps = append(steps, step)
		assertUserFiles(t, final, "notes.txt", "link")
		hidden := Debris(final)
		if len(hidden) != 1 {
			t.Fatalf("at %s: hidden folders %v, want the one being swapped", step, hidden)
		}
		afterKill(t, parent, step)
	}
	defer func() { replaceStep = func(string) {} }()
	for i, body := range []string{"new", "newer"} {
		src := filepath.Join(parent, ".ix.staging-"+body)
		writeOneFileStore(t, src, body)
		if err := ReplaceDir(src, final, ownsA); err != nil {
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
	if now, err := os.Stat(filepath.Join(final, "drafts")); err != nil || !os.SameFile(now, drafts) || now.Mode() != drafts.Mode() {
		t.Errorf("the sub-folder is not the one it was (or its mode changed): %v", err)
	}
	if d := Debris(final); len(d) != 0 {
		t.Errorf("debris left: %v", d)
	}
}

// afterKill copies parent (the index folder and its hidden siblings, links
// as links) as a kill at step would leave it, runs the next write's
// CleanDebris on the copy, and checks the user's entries are all at final.
func afterKill(t *testing.T, parent, step string) {
	t.Helper()
	cp := t.TempDir()
	if err := os.CopyFS(cp, os.DirFS(parent)); err != nil {
		t.Fatal(err)
	}
	// CopyFS writes symbolic links as files: make the link a link again.
	os.Remove(filepath.Join(cp, "ix", "link"))
	os.Symlink("notes.txt", filepath.Join(cp, "ix", "link"))
	final := filepath.Join(cp, "ix")
	// A copy has no hard links, so the hidden folder's files are copies of
	// final's rather than the same files and it is kept: here only the
	// moving back matters (TestDebrisOfLinkedUserFilesRemoved checks the
	// removal).
	CleanDebris(final)
	assertUserFiles(t, final)
}

// A dead hidden folder holding links of final's user files is removed by
// CleanDebris, and final's files stay.
func TestDebrisOfLinkedUserFilesRemoved(t *testing.T) {
	final, src := oldStoreAndNew(t)
	if len(linkFiles(final, src, []string{"drafts", "link", "notes.txt"})) != 2 {
		t.Skip("this file system has no hard links")
	}
	removed, _, busy := CleanDebris(final)
	if len(removed) != 1 || len(busy) != 0 {
		t.Fatalf("removed %v, kept %v: want the hidden folder removed", removed, busy)
	}
	assertUserFiles(t, final)
}

// A hidden folder holding a version of a user's file that differs from
// final's is kept.
func TestDebrisWithADifferentVersionKept(t *testing.T) {
	parent := t.TempDir()
	final, hidden := filepath.Join(parent, "ix"), filepath.Join(parent, ".ix.staging-1")
	writeOneFileStore(t, final, "new")
	writeOneFileStore(t, hidden, "old")
	os.WriteFile(filepath.Join(final, "notes.txt"), []byte("mine"), 0o644)
	os.WriteFile(filepath.Join(hidden, "notes.txt"), []byte("older"), 0o644)
	if removed, _, busy := CleanDebris(final); len(removed) != 0 || len(busy) != 1 {
		t.Fatalf("removed %v, kept %v: want the folder kept", removed, busy)
	}
}

// TestReplaceDirCarriesEditsDuringTheSwap: files the user saves (by
// rename), adds and deletes in the folder between ReplaceDir's listing and
// the swap end up at final as the user left them.
func TestReplaceDirCarriesEditsDuringTheSwap(t *testing.T) {
	final, src := oldStoreAndNew(t)
	os.WriteFile(filepath.Join(final, "gone.txt"), []byte("x"), 0o644)
	replaceStep = func(step string) {
		if step != "linked" {
			return
		}
		tmp := filepath.Join(final, ".notes.swp")
		os.WriteFile(tmp, []byte("saved"), 0o644)
		os.Rename(tmp, filepath.Join(final, "notes.txt")) // an editor's save
		os.WriteFile(filepath.Join(final, "added.txt"), []byte("added"), 0o644)
		os.WriteFile(filepath.Join(final, "drafts", "new.txt"), []byte("new"), 0o644)
		os.Remove(filepath.Join(final, "gone.txt"))
	}
	defer func() { replaceStep = func(string) {} }()
	if err := ReplaceDir(src, final, ownsA); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"notes.txt": "saved", "added.txt": "added", "drafts/new.txt": "new", "a.bin": "new"} {
		if got, err := os.ReadFile(filepath.Join(final, name)); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(final, "gone.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file deleted during the swap came back: %v", err)
	}
}

// TestReplaceDirFallsBackToMoving: files that cannot be linked are moved
// after the swap; when a move fails too, the old folder is kept under a
// ".kept-" name (not at src, which callers remove), the error names it,
// and the next CleanDebris moves the entry back.
func TestReplaceDirFallsBackToMoving(t *testing.T) {
	defer func() { linkFile, moveEntry = os.Link, os.Rename }()
	linkFile = func(string, string) error { return errors.New("no links here") }
	for _, moveFails := range []bool{false, true} {
		final, src := oldStoreAndNew(t)
		moveEntry = os.Rename
		if moveFails {
			moveEntry = func(from, to string) error {
				if filepath.Base(from) == "drafts" {
					return errors.New("cannot move")
				}
				return os.Rename(from, to)
			}
		}
		err := ReplaceDir(src, final, ownsA)
		if got, _ := os.ReadFile(filepath.Join(final, "a.bin")); string(got) != "new" {
			t.Fatalf("final holds %q, want the new store", got)
		}
		if !moveFails {
			if err != nil {
				t.Fatal(err)
			}
			assertUserFiles(t, final)
			continue
		}
		if err == nil || !strings.Contains(err.Error(), ".ix.kept-") || !strings.Contains(err.Error(), "drafts") {
			t.Fatalf("err %v: want the kept folder and the entry named", err)
		}
		os.RemoveAll(src) // what every caller does after an error
		assertUserFiles(t, final, "notes.txt", "link")
		moveEntry = os.Rename
		_, restored, busy := CleanDebris(final)
		if len(restored) != 1 || len(busy) != 0 {
			t.Fatalf("restored %v, kept %v: want drafts moved back", restored, busy)
		}
		assertUserFiles(t, final)
	}
}

// writeOneFileStore makes dir a complete one-file store whose file holds body.
// oldStoreAndNew writes a one-file store with the user's files at final
// (ix) and a new one at src (.ix.staging-1), as ReplaceDir finds them.
func oldStoreAndNew(t *testing.T) (final, src string) {
	t.Helper()
	parent := t.TempDir()
	final, src = filepath.Join(parent, "ix"), filepath.Join(parent, ".ix.staging-1")
	writeOneFileStore(t, final, "old")
	writeOneFileStore(t, src, "new")
	userFiles(t, final)
	return final, src
}

func writeOneFileStore(t *testing.T, dir, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"format": "`+FormatName+`", "files": {"a.bin": {}}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "a.bin"), []byte(body), 0o644)
}

// TestCleanDebrisOfCorpusRestoresFolders: a folder without a manifest (a
// corpus's) killed after the swap holds the user's sub-folder; CleanDebrisOf
// with the corpus's own names moves it back instead of removing it.
func TestCleanDebrisOfCorpusRestoresFolders(t *testing.T) {
	parent := t.TempDir()
	final, old := filepath.Join(parent, "corp"), filepath.Join(parent, ".corp.tmp-1")
	for dir, body := range map[string]string{final: "new", old: "old"} {
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "nodes.jsonl"), []byte(body), 0o644)
	}
	os.MkdirAll(filepath.Join(old, "drafts"), 0o755)
	os.WriteFile(filepath.Join(old, "drafts", "d.txt"), []byte("only copy"), 0o644)
	removed, restored, busy := CleanDebrisOf(final, func(n string) bool { return n == "nodes.jsonl" })
	if len(removed) != 1 || len(restored) != 1 || len(busy) != 0 {
		t.Fatalf("removed %v, restored %v, kept %v", removed, restored, busy)
	}
	if got, _ := os.ReadFile(filepath.Join(final, "drafts", "d.txt")); string(got) != "only copy" {
		t.Errorf("drafts/d.txt at final: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(final, "nodes.jsonl")); string(got) != "new" {
		t.Errorf("the old folder's own file was moved in: nodes.jsonl holds %q", got)
	}
}

// TestCleanDebrisReinstatesOld: a kill between a two-rename swap's
// renames leaves no final and the old folder at "<staging>.old"; the next
// CleanDebris renames it back rather than removing the only copy.
func TestCleanDebrisReinstatesOld(t *testing.T) {
	parent := t.TempDir()
	final, old := filepath.Join(parent, "ix"), filepath.Join(parent, ".ix.staging-1.old")
	writeOneFileStore(t, old, "the only copy")
	removed, _, _ := CleanDebris(final)
	if got, _ := os.ReadFile(filepath.Join(final, "a.bin")); string(got) != "the only copy" || len(removed) != 0 {
		t.Fatalf("final holds %q, removed %v", got, removed)
	}
}

// Debris names a folder's own hidden siblings only: "a[b]" is not a
// pattern that takes "ab"'s, and "ix" does not take "ix2"'s.
func TestDebrisMatchesNamesAsText(t *testing.T) {
	parent := t.TempDir()
	for _, d := range []string{".ab.staging-1", ".a[b].tmp-2", ".ix2.tmp-3", "..a[b].staging-4.tmp-5", ".a[b].kept-6"} {
		os.MkdirAll(filepath.Join(parent, d), 0o755)
	}
	got := Debris(filepath.Join(parent, "a[b]"))
	want := []string{filepath.Join(parent, "..a[b].staging-4.tmp-5"), filepath.Join(parent, ".a[b].kept-6"), filepath.Join(parent, ".a[b].tmp-2")}
	if !slices.Equal(got, want) {
		t.Errorf("Debris(a[b]) = %v, want %v", got, want)
	}
	if got := Debris(filepath.Join(parent, "ix")); len(got) != 0 {
		t.Errorf("Debris(ix) = %v", got)
	}
}

// CleanDebris through a symbolic link looks beside the folder it names,
// where writes stage.
func TestCleanDebrisThroughALink(t *testing.T) {
	parent := t.TempDir()
	real := filepath.Join(parent, "real")
	writeOneFileStore(t, real, "new")
	os.Symlink(real, filepath.Join(parent, "ix"))
	stranded := filepath.Join(parent, ".real.staging-1")
	writeOneFileStore(t, stranded, "old")
	os.WriteFile(filepath.Join(stranded, "notes.txt"), []byte("mine"), 0o644)
	_, restored, _ := CleanDebris(filepath.Join(parent, "ix"))
	if len(restored) != 1 {
		t.Fatalf("restored %v, want notes.txt", restored)
	}
}

// TestReplaceDirHoldsTheOldFolder: until ReplaceDir has carried the user's
// entries over, another run's CleanDebris sees the old folder as a write
// in progress and leaves it; a file saved in final right after the swap is
// kept as the newer version, without a conflict.
func TestReplaceDirHoldsTheOldFolder(t *testing.T) {
	final, src := oldStoreAndNew(t)
	replaceStep = func(step string) {
		if step != "swapped" {
			return
		}
		if removed, _, busy := CleanDebris(final); len(removed) != 0 || len(busy) != 1 {
			t.Errorf("another run's CleanDebris during the swap: removed %v, busy %v", removed, busy)
		}
		tmp := filepath.Join(final, ".swp")
		os.WriteFile(tmp, []byte("saved after"), 0o644)
		os.Rename(tmp, filepath.Join(final, "notes.txt"))
	}
	defer func() { replaceStep = func(string) {} }()
	if err := ReplaceDir(src, final, ownsA); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(final, "notes.txt")); string(got) != "saved after" {
		t.Errorf("notes.txt: %q", got)
	}
	assertUserFiles(t, final, "drafts/deep/d.txt")
	if d := Debris(final); len(d) != 0 {
		t.Errorf("debris left: %v", d)
	}
}
