package retrieve_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gleaner-rag/gleaner/retrieve"
)

func TestProfileReadsFlagAndOptionSpellings(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "p.json")
	os.WriteFile(p, []byte(`{"method":"hybrid","settings":{"hybrid_weight":0.5,"rrf-k":"30"},"group_by":"document"}`), 0o644)
	got, err := retrieve.ReadProfile(p)
	if err != nil || got.Settings["hybrid-weight"] != "0.5" || got.Settings["rrf-k"] != "30" {
		t.Fatalf("%+v %v", got, err)
	}
	for body, want := range map[string]string{
		`{"method":"hybrid","method":"bm25"}`:                        "given twice",
		`{"method":"hybrid","settings":{"rrf_k":1,"rrf-k":2}}`:       "given twice",
		`{"method":"auto"}`:                                          "auto",
		`{"method":"hybrid","settings":{"hybrid-weight":null}}`:      "null",
		`{"method":"hybrid","settings":{"nope":1}}`:                  "nope",
		`{"method":"hybrid","extra":1}`:                              "unknown field",
		`{"method":7}`:                                               "want string",
		`{"method":"hybrid","settings":{"hybrid-weight":"2"}}`:       "hybrid-weight",
		`{"method":"hybrid"} {}`:                                     "trailing",
		`{"method":"hybrid","group_by":"chapter"}`:                   "chapter",
		`{"method":"hybrid","settings":{"hybrid-weight":[{"a":1}]}}`: "list of strings",
	} {
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := retrieve.ReadProfile(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v (want %q)", body, err, want)
		}
	}
}

func TestWriteProfileReplacesOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	prof := &retrieve.Profile{Method: "bm25"}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err == nil {
		if err := retrieve.WriteProfile(fifo, prof, true); err == nil {
			t.Fatal("a FIFO replaced by a profile")
		}
	}
	link := filepath.Join(dir, "link.json")
	os.WriteFile(filepath.Join(dir, "real.json"), []byte("{}"), 0o644)
	os.Symlink("real.json", link)
	if err := retrieve.WriteProfile(link, prof, true); err == nil {
		t.Fatal("a symbolic link replaced by a profile")
	}
	ro := filepath.Join(dir, "ro.json")
	os.WriteFile(ro, []byte("{}"), 0o444)
	if err := retrieve.WriteProfile(ro, prof, true); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(ro); st.Mode().Perm() != 0o444 {
		t.Fatalf("mode %v, want the old file's 0444", st.Mode().Perm())
	}
	if err := retrieve.WriteProfile(filepath.Join(dir, "no", "p.json"), prof, false); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing folder: %v", err)
	}
}
