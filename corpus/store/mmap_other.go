//go:build !unix

package store

import "os"

// mapReadOnly reads the file into memory where mmap is unavailable.
func mapReadOnly(path string, _ int64) ([]byte, error) { return os.ReadFile(path) }

func unmap([]byte) error { return nil }
