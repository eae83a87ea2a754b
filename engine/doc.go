// Package engine is the contract every compute backend implements (device
// buffers, the op set, capability reporting), the registry that selects a
// backend by name, the composed fallbacks for fused ops a backend lacks, and
// the scheduler that batches work from many concurrent retrieval loops.
//
// Backends: "cpu" (package kernels/cpu, always available) and "cuda"
// (package cuda, built with -tags cuda; without the tag it registers a
// constructor that says so). Select one with Open(name) or, by default,
// the GLEANER_BACKEND environment variable; an unknown or unavailable
// backend is an error, never a silent fallback.
package engine
