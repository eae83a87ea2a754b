//go:build !amd64 || purego

package hnsw

import "unsafe"

// prefetchLines does nothing where there is no prefetch instruction to
// call.
func prefetchLines(p unsafe.Pointer, lines int) {}
