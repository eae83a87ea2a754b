// Package kernels holds gleaner's CPU kernels. Each kernel lives in its own
// file, is documented by its reference loop, and has a pure-Go twin; hot
// kernels get a SIMD fast path in cgo C, chosen at start-up from the CPU's
// features. Build with -tags purego (or CGO_ENABLED=0) to use the pure-Go
// twins everywhere.
package kernels
