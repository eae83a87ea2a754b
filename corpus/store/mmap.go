package store

// MapReadOnly maps a file of size bytes read-only (reads it into memory
// where mmap is unavailable); release unmaps it, after which the bytes must
// not be touched.
func MapReadOnly(path string, size int64) (b []byte, release func() error, err error) {
	if b, err = mapReadOnly(path, size); err != nil {
		return nil, nil, err
	}
	return b, func() error { return unmap(b) }, nil
}
