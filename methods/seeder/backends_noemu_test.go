//go:build !cgo || purego

package seeder_test

import "github.com/gleaner-rag/gleaner/engine"

// otherBackends is empty without cgo: the emulation needs it.
func otherBackends() []engine.Backend { return nil }
