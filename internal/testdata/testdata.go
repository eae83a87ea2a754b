// Package testdata locates the shared real datasets (../shared/datasets
// beside the repository) for tests and benchmarks, which skip with a clear
// message where that folder is absent.
package testdata

import (
	"os"
	"path/filepath"
	"testing"
)

// Datasets returns the shared datasets folder, or "" if it is absent.
func Datasets() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			d := filepath.Join(dir, "..", "shared", "datasets")
			if _, err := os.Stat(d); err == nil {
				return d
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Dataset returns the folder of one shared dataset or skips the test.
func Dataset(tb testing.TB, name string) string {
	tb.Helper()
	root := Datasets()
	if root == "" {
		tb.Skipf("shared datasets not found (../shared/datasets beside the repository); skipping %s", name)
	}
	return filepath.Join(root, name)
}
