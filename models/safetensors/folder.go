package safetensors

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"

	"github.com/gleaner-rag/gleaner/corpus"
)

// SaveFolder writes a model folder: the weights as weightsFile, then
// config as config.json (indented JSON), each atomically, config last, so
// a folder with a config always has its weights.
func SaveFolder(dir string, config any, weightsFile string, t map[string]Tensor) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return err
	}
	if err := corpus.WriteFileAtomic(filepath.Join(dir, weightsFile), func(w io.Writer) error { return Write(w, t) }); err != nil {
		return err
	}
	return corpus.WriteFileAtomic(filepath.Join(dir, "config.json"), func(w io.Writer) error { _, err := w.Write(b); return err })
}
