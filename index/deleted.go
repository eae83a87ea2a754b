package index

import (
	"context"
	"fmt"
	"math/bits"
)

// Deleted nodes (tombstones). A live change applied with Change.Tombstone
// marks the nodes it removes deleted instead of renumbering every node
// after them: their numbers, strings, postings and vectors stay where they
// are, their graph rows and every edge into them are dropped, and Lookup,
// DocumentSize and the methods (through retrieve.Visible) no longer see
// them. The BM25 statistics a query uses are those of the live nodes
// alone (a subset, as under a filter), so scores equal a rebuild's.
// Compact renumbers them away; WriteTo compacts before it writes, so an
// index on disk never holds deleted nodes.

// Deleted is the number of deleted nodes (0 for an index opened from disk).
func (ix *Index) Deleted() int { return ix.ndead }

// Live is the number of nodes that are not deleted.
func (ix *Index) Live() int { return ix.N() - ix.ndead }

// IsDeleted reports whether node v is deleted.
func (ix *Index) IsDeleted(v int) bool {
	return ix.dead != nil && ix.dead[v>>6]&(1<<(v&63)) != 0
}

// DeletedWords is the deleted nodes as a bitmap (bit v of word v/64), nil
// when none; the caller must not change it.
func (ix *Index) DeletedWords() []uint64 { return ix.dead }

// withDeleted sets out's deleted nodes: ix's and removed (numbers below
// ix.N(), which a tombstoning change keeps).
func (out *Index) withDeleted(ix *Index, removed []int32) {
	if ix.ndead == 0 && len(removed) == 0 {
		return
	}
	words := make([]uint64, (out.N()+63)/64)
	copy(words, ix.dead)
	for _, v := range removed {
		words[v>>6] |= 1 << (v & 63)
	}
	n := 0
	for _, w := range words {
		n += bits.OnesCount64(w)
	}
	out.dead, out.ndead = words, n
}

// Compact returns ix without its deleted nodes, renumbered as a build of
// the live nodes numbers them (ix itself when none is deleted): an empty
// change that does not delete in place. Sections and the stale record
// carry over unchanged (carrySections, for an empty change): a change
// that deleted nodes left every section but the Incremental ones stale
// already.
func (ix *Index) Compact(ctx context.Context) (*Index, error) {
	if ix.ndead == 0 {
		return ix, nil
	}
	out, err := ix.Apply(ctx, &Change{})
	if err != nil {
		return nil, fmt.Errorf("index: compacting %d deleted nodes: %w", ix.ndead, err)
	}
	return out, nil
}
