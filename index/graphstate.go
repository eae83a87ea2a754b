package index

import (
	"context"
	"sync"

	"github.com/gleaner-rag/gleaner/graphops"
)

// graphState holds an index's graph flat, in blocks, or both, each made
// from the other when first asked for. A live commit works on the blocks
// and shares most of them with the index before it (graphops.Blocks), so
// an index that no reader asks for its flat graph never makes one: a
// commit between queries that do not walk the graph copies only the rows
// it changes. It is immutable but for that caching, and safe for
// concurrent use.
type graphState struct {
	flatOnce  sync.Once
	flat      *graphops.Graph
	blockOnce sync.Once
	blocks    *graphops.BlockGraph
	blockErr  error
	// inBlocks: the state was made from blocks, so blocks never changes
	// and flat is made from it; otherwise flat never changes.
	inBlocks bool
}

func flatGraph(g *graphops.Graph) *graphState { return &graphState{flat: g} }

func blockGraph(b *graphops.BlockGraph) *graphState { return &graphState{blocks: b, inBlocks: true} }

// Graph returns the index's graph, flat (made from the blocks the first
// time a live index is asked: one copy of the graph, which the index then
// keeps). It is read-only.
func (ix *Index) Graph() *graphops.Graph {
	s := ix.graph
	s.flatOnce.Do(func() {
		if s.inBlocks {
			s.flat = s.blocks.Graph(context.Background())
		}
	})
	return s.flat
}

// graphBlocks returns the graph in blocks (aliasing the flat graph the
// first time an opened index is asked).
func (ix *Index) graphBlocks() (*graphops.BlockGraph, error) {
	s := ix.graph
	s.blockOnce.Do(func() {
		if !s.inBlocks {
			s.blocks, s.blockErr = graphops.GraphBlocks(s.flat)
		}
	})
	return s.blocks, s.blockErr
}

// edgeCount is the number of the graph's edges, without making it flat.
func (s *graphState) edgeCount() int {
	if s.inBlocks {
		return int(s.blocks.Out.Edges())
	}
	return len(s.flat.Out.Idx)
}

// EachOut calls fn for each of v's out edges, without making the graph
// flat.
func (ix *Index) EachOut(v int, fn func(dst int32, w float32, rel int32)) {
	if s := ix.graph; s.inBlocks {
		idx, w, rel := s.blocks.Out.Row(v)
		for p := range idx {
			fn(idx[p], w[p], rel[p])
		}
		return
	}
	g := &ix.graph.flat.Out
	for p := g.Ptr[v]; p < g.Ptr[v+1]; p++ {
		fn(g.Idx[p], g.W[p], g.Rel[p])
	}
}

// graphToWrite is the flat graph for a checkpoint: an opened index's, or,
// for one held in blocks, a copy made for the write alone (even when a
// reader made one already: reading that would race with its making), so
// that the live index does not keep a flat copy no reader asked for.
func (ix *Index) graphToWrite(ctx context.Context) *graphops.Graph {
	if s := ix.graph; s.inBlocks {
		return s.blocks.Graph(ctx)
	}
	return ix.graph.flat
}
