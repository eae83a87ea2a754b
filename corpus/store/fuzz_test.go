package store

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzManifest: any manifest bytes are accepted only with a valid own
// checksum, and never panic the reader. A manifest that passes is resealed
// identically: nothing in it was changed on the way in.
func FuzzManifest(f *testing.F) {
	dir := filepath.Join(f.TempDir(), "ix")
	w, _ := NewWriter(dir)
	w.F32("a.f32", []float32{1, 2})
	w.Commit(map[string]any{"bm25": map[string]float64{"k1": 0.9, "b": 0.4}})
	good, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	f.Add(good)
	f.Add([]byte(`{"format":"gleaner-index","version":2,"byte_order":"little","files":{},"checksum":"crc32c:00000000"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseManifest(b, "ix")
		if err != nil {
			return
		}
		if err := verifyManifest(b); err != nil {
			t.Fatalf("accepted a manifest whose checksum fails: %v", err)
		}
		if !bytes.Contains(b, []byte(m.Checksum)) {
			t.Fatalf("checksum %q not in the bytes", m.Checksum)
		}
	})
}
