package index

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/models/lexical"
)

// FuzzOpenMutated damages one file of an index (manifest included) at a
// fuzzed offset, by a fuzzed XOR or a truncation: Open must refuse every
// effective damage, and never panic.
func FuzzOpenMutated(f *testing.F) {
	dir := filepath.Join(f.TempDir(), "ix")
	if err := Build(context.Background(), smallCorpus(), dir, WithLSA(lexical.LSAOptions{Dims: 8, MinDF: 2, MaxDFRatio: 0.5, Seed: 1}), WithoutHead()); err != nil {
		f.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, store.ManifestFile))
	var m store.Manifest
	json.Unmarshal(b, &m)
	files := m.Names()
	f.Add(uint8(0), uint32(10), byte(1), false)
	f.Add(uint8(3), uint32(0), byte(0), true)
	f.Fuzz(func(t *testing.T, file uint8, off uint32, xor byte, truncate bool) {
		name := files[int(file)%len(files)]
		p := filepath.Join(dir, name)
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(p, orig, 0o644)
		damaged := append([]byte(nil), orig...)
		switch {
		case truncate:
			damaged = damaged[:int(off)%(len(orig)+1)]
		case len(orig) > 0:
			damaged[int(off)%len(orig)] ^= xor
		}
		if string(damaged) == string(orig) {
			return
		}
		os.WriteFile(p, damaged, 0o644)
		ix, err := Open(dir, store.OpenOptions{})
		if err == nil {
			ix.Close()
			t.Fatalf("%s damaged at %d (xor %#x, truncate %v) opened", name, off, xor, truncate)
		}
	})
}
