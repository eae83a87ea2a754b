package bert

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A config asking for absurd shapes is refused before any allocation, and
// config.json must be a regular file of bounded size.
func TestConfigRefusesAbsurdShapes(t *testing.T) {
	base := `"model_type":"bert","vocab_size":30522,"hidden_size":384,"num_attention_heads":12,"intermediate_size":1536,"max_position_embeddings":512,"type_vocab_size":2`
	dir := t.TempDir()
	for body, want := range map[string]string{
		`{` + base + `,"num_hidden_layers":1000000000}`: "parameters",
		`{"model_type":"bert","vocab_size":30522,"hidden_size":384,"num_attention_heads":12,"intermediate_size":1536,"max_position_embeddings":100000000,"type_vocab_size":2,"num_hidden_layers":6}`: "max_position_embeddings",
	} {
		p := filepath.Join(dir, "config.json")
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := LoadConfig(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", body, err)
		}
	}
	os.WriteFile(filepath.Join(dir, "ok.json"), []byte(`{`+base+`,"num_hidden_layers":6}`), 0o644)
	if _, err := LoadConfig(filepath.Join(dir, "ok.json")); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.json")
	os.Symlink("/dev/zero", zero)
	if _, err := LoadConfig(zero); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("/dev/zero: %v", err)
	}
}
