// Package indextest builds and opens small indexes in tests.
package indextest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
)

// Build indexes c in a folder of the test's (without a head unless opts
// ask for one) and returns the folder.
func Build(t testing.TB, c *corpus.Corpus, opts ...index.Option) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ix")
	if err := index.Build(context.Background(), c, dir, append([]index.Option{index.WithoutHead()}, opts...)...); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Open opens the index at dir, closed when the test ends.
func Open(t testing.TB, dir string) *index.Index {
	t.Helper()
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}
