//go:build !purego

package hnsw

import "unsafe"

// prefetchLines asks for the lines cache lines from p on; it never faults
// and returns at once.
//
//go:noescape
func prefetchLines(p unsafe.Pointer, lines int)
