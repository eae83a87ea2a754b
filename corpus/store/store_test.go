package store

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeStore(t *testing.T, dir string) {
	t.Helper()
	w, err := NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := firstErr(w.F32("a.f32", []float32{1, 2.5, -3}), w.I64("b.i64", []int64{7, 1 << 40}),
		w.U32("c.u32", nil), w.JSON("d.json", map[string]int{"x": 1})); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(map[string]any{"hello": "world"}); err != nil {
		t.Fatal(err)
	}
}

func firstErr(errs ...error) error { return errors.Join(errs...) }

func TestRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ix")
	writeStore(t, dir)
	r, err := Open(dir, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, _ := r.F32("a.f32")
	b, _ := r.I64("b.i64")
	c, err := r.U32("c.u32")
	var d map[string]int
	if err := r.JSON("d.json", &d); err != nil {
		t.Fatal(err)
	}
	if len(a) != 3 || a[1] != 2.5 || b[1] != 1<<40 || len(c) != 0 || err != nil || d["x"] != 1 {
		t.Fatalf("read back a=%v b=%v c=%v d=%v", a, b, c, d)
	}
	if _, err := r.I32("a.f32"); err == nil {
		t.Error("reading f32 file as i32 succeeded")
	}
	if r.Manifest.Meta["hello"] != "world" {
		t.Errorf("meta %v", r.Manifest.Meta)
	}
}

func TestOpenRejectsDamage(t *testing.T) {
	cases := []struct {
		name   string
		damage func(dir string)
		want   string
	}{
		{"truncated", func(d string) { os.Truncate(filepath.Join(d, "a.f32"), 8) }, "truncated"},
		{"flipped byte", func(d string) {
			p := filepath.Join(d, "b.i64")
			b, _ := os.ReadFile(p)
			b[3] ^= 0xff
			os.WriteFile(p, b, 0o644)
		}, "checksum"},
		{"two flipped files: the first by name is named", func(d string) {
			for _, f := range []string{"b.i64", "a.f32"} {
				p := filepath.Join(d, f)
				b, _ := os.ReadFile(p)
				b[1] ^= 0xff
				os.WriteFile(p, b, 0o644)
			}
		}, "a.f32: checksum"},
		{"missing file", func(d string) { os.Remove(filepath.Join(d, "a.f32")) }, "a.f32"},
		{"wrong version", func(d string) { editManifest(d, func(m *Manifest) { m.Version = 99 }) }, "version 99"},
		{"not an index", func(d string) { os.Remove(filepath.Join(d, ManifestFile)) }, "not a gleaner index"},
		{"garbage manifest", func(d string) { os.WriteFile(filepath.Join(d, ManifestFile), []byte("{"), 0o644) }, "corrupt"},
		{"path escape", func(d string) {
			editManifest(d, func(m *Manifest) { m.Files["../x"] = FileInfo{Kind: KindBytes} })
		}, "escapes"},
		{"manifest meta changed", func(d string) {
			p := filepath.Join(d, ManifestFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), `"world"`, `"worle"`, 1)), 0o644)
		}, "manifest.json: checksum"},
		{"manifest checksum changed", func(d string) {
			p := filepath.Join(d, ManifestFile)
			b, _ := os.ReadFile(p)
			i := strings.Index(string(b), `"crc32c:`) + len(`"crc32c:`)
			b[i] ^= 1
			os.WriteFile(p, b, 0o644)
		}, "manifest.json"},
		{"manifest without checksum", func(d string) {
			p := filepath.Join(d, ManifestFile)
			b, _ := os.ReadFile(p)
			var m Manifest
			json.Unmarshal(b, &m)
			m.Checksum = ""
			b, _ = json.Marshal(m)
			os.WriteFile(p, b, 0o644)
		}, "no single checksum"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ix")
			writeStore(t, dir)
			c.damage(dir)
			r, err := Open(dir, OpenOptions{})
			if err == nil {
				r.Close()
				t.Fatal("damaged store opened")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

func editManifest(dir string, f func(*Manifest)) {
	p := filepath.Join(dir, ManifestFile)
	b, _ := os.ReadFile(p)
	var m Manifest
	json.Unmarshal(b, &m)
	f(&m)
	b, _ = sealManifest(m) // resealed: these cases test the checks behind the checksum
	os.WriteFile(p, b, 0o644)
}

func TestAbortAndReplaceLeaveNoDebris(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "ix")
	writeStore(t, dir)
	w, _ := NewWriter(dir)
	w.F32("partial.f32", []float32{1})
	w.Abort()
	writeStore(t, dir) // replace an existing store
	ents, _ := os.ReadDir(parent)
	if len(ents) != 1 || ents[0].Name() != "ix" {
		names := []string{}
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("parent holds %v, want only ix", names)
	}
	if _, err := Open(dir, OpenOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestWriterRefusesForeignFoldersUpFront(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"user folder":      {"thesis.tex": "x"},
		"foreign manifest": {ManifestFile: `{"name": "my web app"}`, "index.html": "<html>", "notes.txt": "mine"},
		"broken manifest":  {ManifestFile: `{`, "notes.txt": "mine"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "precious")
			os.MkdirAll(dir, 0o755)
			for f, body := range files {
				os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644)
			}
			if _, err := NewWriter(dir); !errors.Is(err, ErrNotOurs) {
				t.Fatalf("NewWriter over a %s: %v, want ErrNotOurs before any work", name, err)
			}
			for f, body := range files {
				if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || string(b) != body {
					t.Errorf("%s changed or lost", f)
				}
			}
		})
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.MkdirAll(empty, 0o755)
	writeStore(t, empty) // an empty folder is a fine target
}

// A rewrite keeps the files a user put inside an index folder; a user file
// whose name the new index also writes stops the rewrite before anything
// moves.
func TestRewriteKeepsUserFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ix")
	writeStore(t, dir)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	os.MkdirAll(filepath.Join(dir, "plots"), 0o755)
	writeStore(t, dir)
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) != "mine" {
		t.Fatalf("notes.txt lost on rewrite: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "plots")); err != nil {
		t.Fatal("a user folder was lost on rewrite")
	}
	os.WriteFile(filepath.Join(dir, "new.f32"), []byte("mine too"), 0o644)
	w, _ := NewWriter(dir)
	w.F32("new.f32", []float32{1})
	if err := w.Commit(nil); err == nil || !strings.Contains(err.Error(), "new.f32") {
		t.Fatalf("a clash with a user's file: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "new.f32")); string(b) != "mine too" {
		t.Error("the user's file was overwritten")
	}
	if _, err := Open(dir, OpenOptions{}); err != nil {
		t.Errorf("the old index is damaged after a refused rewrite: %v", err)
	}
}

// A rewrite through a symbolic link to a store replaces the folder it
// names and keeps the link.
func TestRewriteThroughALinkKeepsTheLink(t *testing.T) {
	root := t.TempDir()
	real, link := filepath.Join(root, "real"), filepath.Join(root, "link")
	writeStore(t, real)
	if err := os.Symlink("real", link); err != nil {
		t.Fatal(err)
	}
	err := Build(link, func(w *Writer) (map[string]any, error) {
		return map[string]any{"v": 2.0}, w.F32("x.f32", []float32{7})
	})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi.Mode(), err)
	}
	r, err := Open(real, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if x, _ := r.F32("x.f32"); len(x) != 1 || x[0] != 7 {
		t.Fatalf("the folder the link names was not rewritten: %v", x)
	}
	if debris, _ := filepath.Glob(filepath.Join(root, ".*")); len(debris) != 0 {
		t.Fatalf("left behind %v", debris)
	}
	if fi, _ := os.Stat(real); fi.Mode().Perm() != 0o755 {
		t.Fatalf("store folder mode %v, want 0755 (others may serve it)", fi.Mode().Perm())
	}
}
