// Package hnsw is a hierarchical navigable small world graph (Malkov and
// Yashunin, 2018) over the rows of a row-major float32 matrix, ranked by
// inner product: approximate top-k dense search whose cost grows with
// log N rather than N, and the neighbour lists the graph builders need.
//
// The graph stores node ids only; the vectors stay in the caller's matrix
// (the index's, memory-mapped), so a graph is ¼ of the matrix's bytes or
// less. Rows are scored with kernels.DotRows, the gather form of the exact
// scan's kernel, so a hit's score equals the exact search's bit for bit:
// only which rows are found can differ.
//
// The build is deterministic: insertion runs in batches whose searches see
// the graph as the earlier batches left it, and whose links are applied in
// node order, so the same vectors and options give the same graph whatever
// the number of workers.
package hnsw

import (
	"fmt"
	"runtime"
)

// Options configure a build. The names and meanings are hnswlib's and
// FAISS's (M, efConstruction), so a graph can be compared with theirs at
// the same settings.
type Options struct {
	// M is the number of links a node keeps on each upper layer; layer 0
	// keeps up to 2M.
	M int
	// EfConstruction is how many candidates an insertion's search keeps.
	EfConstruction int
	// Seed draws each node's top layer.
	Seed uint64
	// Workers run an insertion batch's searches and link updates in
	// parallel; the graph does not depend on it.
	Workers int
}

// DefaultOptions are M 16 and efConstruction 100, on every CPU.
func DefaultOptions() Options {
	return Options{M: 16, EfConstruction: 100, Seed: 1, Workers: runtime.GOMAXPROCS(0)}
}

// Limits on the options: beyond them a build is a mistake, not a choice.
const (
	MaxM              = 256
	MaxEfConstruction = 1 << 14
	MaxWorkers        = 1024
	// MaxLevel caps a node's top layer; at M ≥ 2 a draw above it has
	// probability below 2⁻³⁰ per node.
	MaxLevel = 30
)

// Validate rejects options out of range.
func (o Options) Validate() error {
	switch {
	case o.M < 2 || o.M > MaxM:
		return fmt.Errorf("hnsw: M must be in [2, %d], got %d", MaxM, o.M)
	case o.EfConstruction < 1 || o.EfConstruction > MaxEfConstruction:
		return fmt.Errorf("hnsw: efConstruction must be in [1, %d], got %d", MaxEfConstruction, o.EfConstruction)
	case o.Workers < 1 || o.Workers > MaxWorkers:
		return fmt.Errorf("hnsw: workers must be in [1, %d], got %d", MaxWorkers, o.Workers)
	}
	return nil
}
