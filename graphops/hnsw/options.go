// Package hnsw is a hierarchical navigable small world graph (Malkov and
// Yashunin, 2018) over the rows of a row-major float32 matrix, ranked by
// inner product: approximate top-k dense search whose cost grows with
// log N rather than N, and the neighbour lists the graph builders need.
//
// The graph stores node ids only; the vectors stay in the caller's matrix
// (the index's, memory-mapped), so a graph is ¼ of the matrix's bytes or
// less. Rows are scored by a Dot the caller passes: the backend's gather
// form of its exact scan (engine.DotRowsOf), so a hit's score equals the
// exact search's bit for bit and only which rows are found can differ.
//
// The build is deterministic: insertion runs in batches whose searches see
// the graph as the earlier batches left it, and whose links are applied in
// node order, so the same vectors and options give the same graph whatever
// the number of workers.
package hnsw

import (
	"fmt"
	"runtime"

	"github.com/gleaner-rag/gleaner/internal/vecmath"
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
	// KeepPruned fills the link slots the heuristic leaves empty with the
	// closest candidates it dropped (the paper's keepPrunedConnections,
	// which hnswlib and FAISS leave out): more links per node, a slower
	// build, a shorter walk to the same recall for queries far from the data.
	KeepPruned bool
	// Dot scores rows during the build; nil: GoDot.
	Dot Dot
	// SearchCodes makes the build's searches score int8 codes of the rows
	// (each row as steps of its largest magnitude /127, quantized by the
	// build: a quarter of the bytes a visit reads, which is what a build
	// over rows far larger than the caches waits on) instead of the rows.
	// The candidates a search finds are scored again by Dot before the
	// heuristic chooses among them, and links are pruned on Dot's scores,
	// so only which candidates a search finds can differ.
	SearchCodes bool
	// CodeDot scores codes when SearchCodes; nil: GoCodeDot.
	CodeDot CodeDot
}

// CodeDot scores the int8 rows of codes (width d, one scale per row) named
// by ids against q into out[:len(ids)]: out[i] = scale[ids[i]] · (codes
// row ids[i] · q). A backend's is engine.CodeRowScorerOf; ids are always
// rows of codes.
type CodeDot func(codes []int8, scale []float32, d int, ids []int32, q, out []float32)

// GoCodeDot is the portable CodeDot: four float32 accumulators, in the
// order of the CPU backend's pure-Go kernel, then the scale.
func GoCodeDot(codes []int8, scale []float32, d int, ids []int32, q, out []float32) {
	for i, r := range ids {
		out[i] = vecmath.DotCodes(codes[int(r)*d:int(r)*d+d], q) * scale[r]
	}
}

// Dot scores the rows of X (row-major, width d) named by ids against q
// into out[:len(ids)]. A backend's (engine.DotRowsOf) scores each row as
// its exact search does; ids are always rows of X.
type Dot func(X []float32, d int, ids []int32, q, out []float32)

// GoDot is the portable Dot: four float32 accumulators, in the order of
// the CPU backend's pure-Go kernel.
func GoDot(X []float32, d int, ids []int32, q, out []float32) {
	for i, r := range ids {
		row := X[int(r)*d : int(r)*d+d]
		var s0, s1, s2, s3 float32
		j := 0
		for ; j+4 <= d; j += 4 {
			s0 += row[j] * q[j]
			s1 += row[j+1] * q[j+1]
			s2 += row[j+2] * q[j+2]
			s3 += row[j+3] * q[j+3]
		}
		for ; j < d; j++ {
			s0 += row[j] * q[j]
		}
		out[i] = (s0 + s1) + (s2 + s3)
	}
}

// orGo is dot, or GoDot when nil.
func orGo(dot Dot) Dot {
	if dot == nil {
		return GoDot
	}
	return dot
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
