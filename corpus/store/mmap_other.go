//go:build !unix

package store

import "os"

// mapsFiles says that mapOpened copies the file into memory.
const mapsFiles = false

// mapReadOnly reads the file into memory where mmap is unavailable.
func mapReadOnly(path string, _ int64) ([]byte, error) { return os.ReadFile(path) }

// mapOpened reads size bytes of an open file where mmap is unavailable.
func mapOpened(f *os.File, size int64) ([]byte, error) { return readAligned(f, size) }

func unmap([]byte) error { return nil }
