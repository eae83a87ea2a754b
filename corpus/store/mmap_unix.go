//go:build unix

package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapsFiles says that mapOpened maps the file (its pages are the page
// cache's, so the file can be read beside the mapping).
const mapsFiles = true

// mapReadOnly maps a whole file read-only; empty files map to nil.
func mapReadOnly(path string, size int64) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return mapOpened(f, size)
}

// mapOpened maps size bytes of an open file read-only.
func mapOpened(f *os.File, size int64) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	return unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
}

func unmap(b []byte) error {
	if b == nil {
		return nil
	}
	return unix.Munmap(b)
}
