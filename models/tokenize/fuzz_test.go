package tokenize

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad: a tokenizer.json of any content loads or fails with an error,
// even where the third-party loader panics (Load recovers it).
func FuzzLoad(f *testing.F) {
	dir := f.TempDir()
	good := filepath.Join(dir, "tokenizer.json")
	if err := WriteBERT(good, []string{"hello", "world"}); err != nil {
		f.Fatal(err)
	}
	b, _ := os.ReadFile(good)
	f.Add(b)
	f.Add([]byte(`{"model":{"type":"WordPiece","vocab":{"[UNK]":-5}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "tokenizer.json")
		os.WriteFile(p, b, 0o644)
		if tk, err := Load(p); err == nil {
			tk.IDs("hello wörld")
		}
	})
}
