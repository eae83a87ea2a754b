package ptx

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sourceHash is cuda/check.sh's: sha256 of the .cu then every .cuh, sorted.
func sourceHash(t *testing.T, cu string) string {
	t.Helper()
	h := sha256.New()
	b, err := os.ReadFile(cu)
	if err != nil {
		t.Fatal(err)
	}
	h.Write(b)
	hdrs, _ := filepath.Glob("../kernels/*.cuh")
	slices.Sort(hdrs)
	for _, p := range hdrs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestPTXMatchesSources fails when a kernel changed but its PTX was not
// regenerated (bash cuda/check.sh --update), when a kernel has no PTX, or
// when PTX is left for a kernel that is gone.
func TestPTXMatchesSources(t *testing.T) {
	srcs, _ := filepath.Glob("../kernels/*.cu")
	if len(srcs) == 0 {
		t.Fatal("no kernels found in cuda/kernels")
	}
	var names []string
	for _, cu := range srcs {
		name := strings.TrimSuffix(filepath.Base(cu), ".cu")
		names = append(names, name)
		want := sourceHash(t, cu)
		for _, a := range Archs {
			p, err := Source(name, a)
			if err != nil {
				t.Errorf("%v: run 'bash cuda/check.sh --update' and commit cuda/ptx/", err)
				continue
			}
			if got := SourceHash(p); got != want {
				t.Errorf("cuda/ptx/%s.compute_%d.ptx is stale (made from sha256 %.12s…, the sources are %.12s…): run 'bash cuda/check.sh --update' and commit cuda/ptx/", name, a, got, want)
			}
			if es := Entries(p); len(es) == 0 {
				t.Errorf("cuda/ptx/%s.compute_%d.ptx has no kernel entry", name, a)
			}
		}
	}
	slices.Sort(names)
	if got := Kernels(); !slices.Equal(got, names) {
		t.Errorf("PTX for kernels %v, sources for %v", got, names)
	}
}
