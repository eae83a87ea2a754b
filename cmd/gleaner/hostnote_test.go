package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
)

// otherCPU is the cpu backend under another name: a stand-in for a device
// backend, so the CLI's note on host-only work can be tested without one.
type otherCPU struct{ *cpu.Backend }

func (otherCPU) Name() string { return "other-cpu" }

func init() {
	engine.Register("other-cpu", func() (engine.Backend, error) { return otherCPU{cpu.New()}, nil })
}

// A method whose work stays on the host says so when --backend is not the
// cpu one, naming what runs where; one that runs on the backend says nothing.
func TestBackendNoteForHostWork(t *testing.T) {
	dir := t.TempDir()
	cdir, idir := filepath.Join(dir, "corpus"), filepath.Join(dir, "ix")
	c := synth.Generate(synth.Options{People: 40, Cities: 8, Countries: 3, Bands: 8, Queries: 5, Seed: 4})
	if err := corpus.Write(cdir, c); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "index", cdir, "-o", idir, "--dims", "16", "--train-head=false"); err != nil {
		t.Fatalf("index: %v\n%s", err, out)
	}
	const note = "--backend applies only in part"
	for _, m := range []struct {
		method, host string // host: the words the note must carry; "" for none
	}{
		{"ppr", "PageRank runs on the host"},
		{"vector", ""},
		{"bm25", ""},
	} {
		out, err := run(t, "--backend", "other-cpu", "query", "--index", idir, "--method", m.method, c.Queries[0].Text)
		if err != nil || !strings.Contains(out, "results by "+m.method) {
			t.Fatalf("%s: %v\n%s", m.method, err, out)
		}
		if got := strings.Contains(out, note); got != (m.host != "") || !strings.Contains(out, m.host) {
			t.Errorf("%s on other-cpu: note %v, want %v with %q:\n%s", m.method, got, m.host != "", m.host, out)
		}
	}
	out, err := run(t, "--backend", "other-cpu", "graph", "build", "--kind", "knn", "--index", idir)
	if err != nil || !strings.Contains(out, note) || !strings.Contains(out, "lexical neighbours are counted on the host") {
		t.Errorf("graph build --kind knn on other-cpu: %v\n%s", err, out)
	}
}
