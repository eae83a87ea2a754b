package safetensors

import (
	"fmt"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/internal/safefile"
)

// Map opens a safetensors file memory-mapped read-only: F32 tensors share
// the mapping (a 5 GB decoder loads in the time its header takes, and its
// weights live in the page cache, not twice in the heap); F16 and BF16
// are converted as Read does. The tensors are valid until release is
// called and must not be written.
func Map(path string) (t map[string]Tensor, release func() error, err error) {
	f, err := safefile.Open(path, safefile.MaxWeights) // a regular file: a device cannot be mapped as weights
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		return nil, nil, err
	}
	b, unmap, err := store.MapReadOnly(path, fi.Size())
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	if t, err = parse(b, path, true); err != nil {
		unmap()
		return nil, nil, err
	}
	return t, unmap, nil
}
