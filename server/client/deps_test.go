package client_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The client links the standard library and the API types only: a
// service that calls gleaner does not link the engine, cgo or any
// third-party module.
func TestClientImportsOnlyTheStandardLibrary(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "github.com/gleaner-rag/gleaner/server/client").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	got := strings.Fields(string(out))
	want := []string{"github.com/gleaner-rag/gleaner/server/api", "github.com/gleaner-rag/gleaner/server/client"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("server/client's non-standard dependencies are %v, want only %v", got, want)
	}
}
