package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/gleaner-rag/gleaner/"

// deps lists the gleaner packages pkg imports, directly or not.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(gobin, "list", "-deps", module+pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	var own []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, module) && p != module+pkg {
			own = append(own, strings.TrimPrefix(p, module))
		}
	}
	return own
}

func TestLayering(t *testing.T) {
	for _, c := range []struct {
		pkg       string
		forbidden []string // prefixes of packages it must not reach
	}{
		{"engine", []string{""}}, // nothing of gleaner's at all
		{"graphops", []string{"models", "kernels", "index", "retrieve"}},
		{"index", []string{"kernels", "retrieve", "methods"}},
		{"retrieve", []string{"kernels", "methods", "cuda"}},
		{"eval", []string{"kernels", "methods", "cuda"}},
		{"server", []string{"kernels", "methods", "cuda"}},
		{"methods/fastinsight", []string{"kernels", "cuda"}},
		{"methods/gar", []string{"kernels", "cuda"}},
		{"methods/re2", []string{"kernels", "cuda"}},
		{"methods/ppr", []string{"kernels", "cuda"}},
		{"methods/trigraph", []string{"kernels", "cuda"}},
		{"methods/ketrag", []string{"kernels", "cuda"}},
		{"methods/fuserag", []string{"kernels", "cuda"}},
	} {
		for _, d := range deps(t, c.pkg) {
			for _, f := range c.forbidden {
				if strings.HasPrefix(d, f) {
					t.Errorf("%s imports %s (it must not reach %q)", c.pkg, d, f)
				}
			}
		}
	}
}
