package store

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A copied store serves what it read at Open: a file truncated and another
// rewritten in place afterwards change nothing (a mapped store would
// raise SIGBUS on the truncated one).
func TestCopiedStoreIgnoresChangesOnDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ix")
	writeStore(t, dir)
	r, err := Open(dir, OpenOptions{Copy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := os.Truncate(filepath.Join(dir, "a.f32"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.i64"), make([]byte, 16), 0o644); err != nil {
		t.Fatal(err)
	}
	a, _ := r.F32("a.f32")
	b, _ := r.I64("b.i64")
	if !slices.Equal(a, []float32{1, 2.5, -3}) || !slices.Equal(b, []int64{7, 1 << 40}) {
		t.Fatalf("after the files changed: a=%v b=%v", a, b)
	}
	if err := r.Scrub(); err != nil {
		t.Errorf("scrub of a copied store: %v", err)
	}
}

// A mapped store rewritten in place (same size) is caught by Scrub,
// which names the file.
func TestScrubFindsInPlaceChanges(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ix")
	writeStore(t, dir)
	r, err := Open(dir, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Scrub(); err != nil {
		t.Fatalf("scrub of an untouched store: %v", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "b.i64"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff}, 3) // in place: the mapping sees it
	f.Close()
	if err := r.Scrub(); !errors.Is(err, ErrCorrupt) || !contains(err.Error(), "b.i64", "changed in place") {
		t.Fatalf("scrub after an in-place write: %v", err)
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// An open that races a rebuild's swap reads one whole store: here the
// swap happens after the manifest is read (the open keeps reading the old
// folder), and, on another open, between the swap's two renames (the
// folder is gone: the open retries once and reads the new store).
func TestOpenDuringASwap(t *testing.T) {
	base := t.TempDir()
	dir, next := filepath.Join(base, "ix"), filepath.Join(base, "ix.new")
	writeStore(t, dir)
	w, err := NewWriter(next)
	if err != nil {
		t.Fatal(err)
	}
	w.F32("a.f32", []float32{9, 9}) // a different size: a mixed read would fail its checks
	w.I64("b.i64", []int64{1})
	if err := w.Commit(nil); err != nil {
		t.Fatal(err)
	}
	defer func() { beforeOpen = func(int) {} }()
	beforeOpen = func(attempt int) {
		switch attempt {
		case 1: // the first rename of a swap: the folder is gone
			if err := os.Rename(dir, dir+".old"); err != nil {
				t.Fatal(err)
			}
		case 2: // the second: the new folder in place
			if err := os.Rename(next, dir); err != nil {
				t.Fatal(err)
			}
		}
	}
	r, err := Open(dir, OpenOptions{})
	if err != nil {
		t.Fatalf("an open between the renames: %v", err)
	}
	a, _ := r.F32("a.f32")
	if !slices.Equal(a, []float32{9, 9}) {
		t.Fatalf("read %v, want the new store", a)
	}
	r.Close() // a is unmapped from here
	// The folder moves away after Open has it: the open still reads the
	// store it started on, whole.
	beforeOpen = func(int) {}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := os.Rename(dir, dir+".gone"); err != nil {
		t.Fatal(err)
	}
	writeStore(t, dir) // a different store now sits at the path
	rr, files := mapThrough(t, root, dir)
	defer closeAll(files)
	if err := rr.verify("checksum %08x, manifest says %08x", files); err != nil {
		t.Fatalf("verifying through the root after the swap: %v", err)
	}
	a, _ = rr.F32("a.f32")
	if !slices.Equal(a, []float32{9, 9}) {
		t.Fatalf("read %v through the root, want the store it opened", a)
	}
	rr.Close()
}

// mapThrough maps every file of the store opened as root (named dir) as
// Open does, returning the reader and the files, still open, unverified.
func mapThrough(t *testing.T, root *os.Root, dir string) (*Reader, map[string]*os.File) {
	t.Helper()
	m, err := readManifest(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	r := &Reader{Dir: dir, Manifest: m, maps: map[string][]byte{}}
	files := map[string]*os.File{}
	for name, fi := range m.Files {
		f, err := r.mapFile(root, name, fi)
		if err != nil {
			closeAll(files)
			t.Fatalf("mapping %s through the root: %v", name, err)
		}
		files[name] = f
	}
	return r, files
}
