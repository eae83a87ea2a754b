package graphops

import (
	"context"
	"fmt"
	"slices"

	"github.com/gleaner-rag/gleaner/internal/parallel"
)

// A live commit changes a few rows of a graph of many. Held flat, every
// commit copied the whole graph (Rewrite), and at 10⁵ passages that copy
// was most of what a commit allocated: the collector it woke slowed the
// queries beside it. Blocks hold one direction in blocks of BlockRows
// rows; a commit copies the blocks whose rows change and shares the rest
// with the graph before it. Readers that want the flat form make it once
// (CSR), when they first need it.

// BlockRows is how many rows a block holds: a changed row copies its
// block's entries (tens of them on a mentions graph), and a commit copies
// the list of blocks (one word per BlockRows rows).
const BlockRows = 32

// Blocks is one direction of a graph in blocks of rows. It is immutable
// once made; blocks are shared between graphs.
type Blocks struct {
	n      int
	edges  int64
	blocks []*rowBlock
}

// rowBlock holds rows [b·BlockRows, b·BlockRows+len(ptr)−1): row i's
// entries are idx[ptr[i]:ptr[i+1]], with w and rel beside.
type rowBlock struct {
	ptr []int64
	idx []int32
	w   []float32
	rel []int32
}

// BlockGraph is a graph in blocks, both directions, with relations.
type BlockGraph struct {
	Out, In Blocks
}

// Edges is the number of entries.
func (b *Blocks) Edges() int64 { return b.edges }

// Row is v's entries: destinations, weights and relations (aliasing b).
func (b *Blocks) Row(v int) (idx []int32, w []float32, rel []int32) {
	bl := b.blocks[v/BlockRows]
	i := v % BlockRows
	lo, hi := bl.ptr[i], bl.ptr[i+1]
	return bl.idx[lo:hi:hi], bl.w[lo:hi:hi], bl.rel[lo:hi:hi] // capped: an append must not write into the next row or a shared run
}

// BlocksOf holds c in blocks that alias its arrays (c must not change
// after). c needs relations.
func BlocksOf(c *CSR) (Blocks, error) {
	if len(c.Rel) != len(c.Idx) || len(c.W) != len(c.Idx) {
		return Blocks{}, fmt.Errorf("graphops: blocks need weights and relations on every entry")
	}
	n := c.N()
	out := Blocks{n: n, edges: int64(len(c.Idx)), blocks: make([]*rowBlock, (n+BlockRows-1)/BlockRows)}
	ptrs := make([]int64, 0, n+len(out.blocks)) // one allocation for every block's pointers
	for b := range out.blocks {
		lo, hi := b*BlockRows, min((b+1)*BlockRows, n)
		base := c.Ptr[lo]
		start := len(ptrs)
		for v := lo; v <= hi; v++ {
			ptrs = append(ptrs, c.Ptr[v]-base)
		}
		out.blocks[b] = &rowBlock{ptr: ptrs[start:len(ptrs):len(ptrs)], idx: c.Idx[base:c.Ptr[hi]], w: c.W[base:c.Ptr[hi]], rel: c.Rel[base:c.Ptr[hi]]}
	}
	return out, nil
}

// GraphBlocks holds g in blocks (aliasing it).
func GraphBlocks(g *Graph) (*BlockGraph, error) {
	out, err := BlocksOf(&g.Out)
	if err != nil {
		return nil, err
	}
	in, err := BlocksOf(&g.In)
	if err != nil {
		return nil, err
	}
	return &BlockGraph{Out: out, In: in}, nil
}

// CSR is b flat, in new arrays.
func (b *Blocks) CSR(ctx context.Context) CSR {
	c := CSR{Ptr: make([]int64, b.n+1), Idx: make([]int32, 0, b.edges), W: make([]float32, 0, b.edges), Rel: make([]int32, 0, b.edges)}
	for k, bl := range b.blocks {
		if k%256 == 0 {
			parallel.Yield(ctx)
		}
		base := int64(len(c.Idx))
		for i := 1; i < len(bl.ptr); i++ {
			c.Ptr[k*BlockRows+i] = base + bl.ptr[i]
		}
		c.Idx, c.W, c.Rel = append(c.Idx, bl.idx...), append(c.W, bl.w...), append(c.Rel, bl.rel...)
	}
	return c
}

// Graph is g flat, in new arrays.
func (g *BlockGraph) Graph(ctx context.Context) *Graph {
	return &Graph{Out: g.Out.CSR(ctx), In: g.In.CSR(ctx)}
}

// KeepFunc says where an old row u's entry to dst (relation rel) points
// after a change, if it stays.
type KeepFunc func(u int, dst, rel int32) (int32, bool)

// RewriteBlocks is Rewrite for a change that keeps every vertex's number
// (a removed vertex loses its row, rowOf −1; added vertices come after
// the old ones), over blocks: only the rows in rows (old numbers, any
// order, repeats allowed), the sources of added and the new rows are
// looked at, so rows must hold every old row for which keep would
// change an entry or which rowOf drops. The result shares every block
// whose rows stay the same with old. Like Rewrite it equals
// Build(n, edges, true), and yields where ctx asks.
func RewriteBlocks(ctx context.Context, old *BlockGraph, n int, rowOf []int32, rows []int32, keep KeepFunc, added []Edge) (*BlockGraph, error) {
	oldN := old.Out.n
	if old.In.n != oldN {
		return nil, fmt.Errorf("graphops: %d out rows and %d in rows", oldN, old.In.n)
	}
	if len(rowOf) != oldN || n < oldN {
		return nil, fmt.Errorf("graphops: %d row numbers for %d rows, into %d vertices (blocks keep every number)", len(rowOf), oldN, n)
	}
	for u, v := range rowOf {
		if v != int32(u) && v != -1 {
			return nil, fmt.Errorf("graphops: old row %d becomes row %d: blocks keep numbers", u, v)
		}
	}
	for i, e := range added {
		if e.Src < 0 || int(e.Src) >= n || e.Dst < 0 || int(e.Dst) >= n {
			return nil, fmt.Errorf("graphops: edge %d (%d→%d) outside %d vertices", i, e.Src, e.Dst, n)
		}
	}
	for _, u := range rows {
		if u < 0 || int(u) >= oldN {
			return nil, fmt.Errorf("graphops: row %d to look at, of %d", u, oldN)
		}
	}
	cand := candidateRows(rows, added, oldN, n)
	fresh, changed, err := rewriteOutRows(ctx, &old.Out, n, rowOf, cand, keep, added)
	if err != nil {
		return nil, err
	}
	out := old.Out.withRows(ctx, n, fresh)
	in := old.In.withRows(ctx, n, patchedInRows(ctx, &old.Out, &old.In, changed, fresh, n))
	return &BlockGraph{Out: out, In: in}, nil
}

// candidateRows are the rows a block rewrite looks at, ascending: rows,
// added's sources and the new rows.
func candidateRows(rows []int32, added []Edge, oldN, n int) []int32 {
	c := make([]int32, 0, len(rows)+len(added)+n-oldN)
	c = append(c, rows...)
	for _, e := range added {
		c = append(c, e.Src)
	}
	for v := oldN; v < n; v++ {
		c = append(c, int32(v))
	}
	slices.Sort(c)
	return slices.Compact(c)
}

// blockRow is one row's new entries.
type blockRow struct {
	v   int32
	idx []int32
	w   []float32
	rel []int32
}

// rewriteOutRows makes the candidate rows anew (as Rewrite makes a row)
// and returns those that differ from their old row, ascending.
func rewriteOutRows(ctx context.Context, old *Blocks, n int, rowOf []int32, cand []int32, keep KeepFunc, added []Edge) ([]blockRow, []int32, error) {
	order := make([]int32, len(added)) // added by source, stably
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return int(added[a].Src) - int(added[b].Src) })
	var fresh []blockRow
	var changed []int32
	var c CSR // the row being made, as sortRow wants it
	var buf []Edge
	a := 0
	for k, v := range cand {
		if k%1024 == 0 {
			parallel.Yield(ctx)
		}
		c.Idx, c.W, c.Rel = c.Idx[:0], c.W[:0], c.Rel[:0]
		if int(v) < old.n && rowOf[v] >= 0 {
			idx, w, rel := old.Row(int(v))
			for p := range idx {
				d, ok := keep(int(v), idx[p], rel[p])
				if !ok {
					continue
				}
				if d < 0 || int(d) >= n {
					return nil, nil, fmt.Errorf("graphops: row %d entry %d kept as vertex %d of %d", v, p, d, n)
				}
				c.Idx, c.W, c.Rel = append(c.Idx, d), append(c.W, w[p]), append(c.Rel, rel[p])
			}
		}
		for a < len(order) && added[order[a]].Src < v {
			a++
		}
		for ; a < len(order) && added[order[a]].Src == v; a++ {
			e := added[order[a]]
			c.Idx, c.W, c.Rel = append(c.Idx, e.Dst), append(c.W, e.W), append(c.Rel, e.Rel)
		}
		buf = sortRow(&c, 0, buf)
		if int(v) < old.n && sameEntries(old, int(v), &c) {
			continue
		}
		fresh = append(fresh, freshRow(v, &c))
		changed = append(changed, v)
	}
	return fresh, changed, nil
}

// sameEntries reports whether b's row v holds c's entries.
func sameEntries(b *Blocks, v int, c *CSR) bool {
	idx, w, rel := b.Row(v)
	return slices.Equal(idx, c.Idx) && slices.Equal(w, c.W) && slices.Equal(rel, c.Rel)
}

// withRows is b over n rows with the given rows (ascending) in place of
// theirs; rows past b's are empty but where given. Blocks without a
// given row are shared.
func (b *Blocks) withRows(ctx context.Context, n int, rows []blockRow) Blocks {
	out := Blocks{n: n, edges: b.edges, blocks: make([]*rowBlock, (n+BlockRows-1)/BlockRows)}
	copy(out.blocks, b.blocks)
	if last := len(b.blocks) - 1; last >= 0 && b.n%BlockRows != 0 && n > b.n {
		out.blocks[last] = nil // a partial last block that grows is made anew
	}
	for k := 0; k < len(rows); {
		if k%256 == 0 {
			parallel.Yield(ctx)
		}
		blk := int(rows[k].v) / BlockRows
		e := k
		for e < len(rows) && int(rows[e].v)/BlockRows == blk {
			e++
		}
		out.blocks[blk] = b.blockWith(blk, n, rows[k:e], &out.edges)
		k = e
	}
	for blk, bl := range out.blocks { // new blocks no given row reached
		if bl == nil {
			out.blocks[blk] = b.blockWith(blk, n, nil, &out.edges)
		}
	}
	return out
}

// blockWith is block blk over n rows with rows (all in it, ascending) in
// place of b's, counting the entries it adds and drops into edges.
func (b *Blocks) blockWith(blk, n int, rows []blockRow, edges *int64) *rowBlock {
	lo, hi := blk*BlockRows, min((blk+1)*BlockRows, n)
	size := 0
	var u uniform
	k := 0
	for v := lo; v < hi; v++ {
		switch {
		case k < len(rows) && int(rows[k].v) == v:
			size += len(rows[k].idx)
			u.add(rows[k].w, rows[k].rel)
			k++
		case v < b.n:
			idx, w, rel := b.Row(v)
			size += len(idx)
			u.add(w, rel)
		}
	}
	*edges += int64(size)
	if blk < len(b.blocks) && b.blocks[blk] != nil {
		*edges -= int64(len(b.blocks[blk].idx))
	}
	bl := &rowBlock{ptr: make([]int64, 1, hi-lo+1), idx: make([]int32, 0, size)}
	w, rel, shared := u.arrays(size)
	k = 0
	for v := lo; v < hi; v++ {
		switch {
		case k < len(rows) && int(rows[k].v) == v:
			r := &rows[k]
			bl.idx = append(bl.idx, r.idx...)
			if !shared {
				w, rel = append(w, r.w...), append(rel, r.rel...)
			}
			k++
		case v < b.n:
			idx, rw, rr := b.Row(v)
			bl.idx = append(bl.idx, idx...)
			if !shared {
				w, rel = append(w, rw...), append(rel, rr...)
			}
		}
		bl.ptr = append(bl.ptr, int64(len(bl.idx)))
	}
	bl.w, bl.rel = w, rel
	return bl
}

// patchedInRows are the in rows that changed out rows (changed, with
// their new entries fresh) reach before or after, made as patchIn makes
// them, ascending; and every new row's.
func patchedInRows(ctx context.Context, out, in *Blocks, changed []int32, fresh []blockRow, n int) []blockRow {
	isChanged := func(u int32) bool { _, ok := slices.BinarySearch(changed, u); return ok }
	var touched []int32
	for i := range changed {
		if i%1024 == 0 {
			parallel.Yield(ctx)
		}
		touched = appendMoved(touched, out, &fresh[i])
	}
	for v := in.n; v < n; v++ {
		touched = append(touched, int32(v))
	}
	slices.Sort(touched)
	touched = slices.Compact(touched)
	isTouched := func(d int32) bool { _, ok := slices.BinarySearch(touched, d); return ok }
	size := 0 // at their size: a title gaining an owner gives it an entry from every row that mentions it
	for i := range changed {
		for _, d := range fresh[i].idx {
			if isTouched(d) {
				size++
			}
		}
	}
	entries := make([]inEntry, 0, size) // the changed sources' new entries into touched rows, by source then row order
	for i, v := range changed {
		r := &fresh[i]
		for p, d := range r.idx {
			if isTouched(d) {
				entries = append(entries, inEntry{d, v, r.w[p], r.rel[p]})
			}
		}
	}
	slices.SortStableFunc(entries, func(a, b inEntry) int { return int(a.dst) - int(b.dst) })
	rows := make([]blockRow, 0, len(touched))
	f := 0
	for k, d := range touched {
		if k%1024 == 0 {
			parallel.Yield(ctx)
		}
		for f < len(entries) && entries[f].dst < d {
			f++
		}
		g := f
		for g < len(entries) && entries[g].dst == d {
			g++
		}
		rows = append(rows, mergedInRow(in, d, isChanged, entries[f:g]))
		f = g
	}
	return rows
}

// appendMoved appends the destinations whose entries from r's row differ
// between out's row and r (both sorted by destination, then relation):
// only their in rows change. A row that gains one mention keeps the in
// rows of the destinations it pointed to before, hubs among them.
func appendMoved(touched []int32, out *Blocks, r *blockRow) []int32 {
	var idx []int32
	var w []float32
	var rel []int32
	if int(r.v) < out.n {
		idx, w, rel = out.Row(int(r.v))
	}
	p, q := 0, 0
	for p < len(idx) || q < len(r.idx) {
		var d int32
		switch {
		case q == len(r.idx) || (p < len(idx) && idx[p] < r.idx[q]):
			d = idx[p]
		default:
			d = r.idx[q]
		}
		p0, q0 := p, q
		for p < len(idx) && idx[p] == d {
			p++
		}
		for q < len(r.idx) && r.idx[q] == d {
			q++
		}
		if !slices.Equal(idx[p0:p], r.idx[q0:q]) || !slices.Equal(w[p0:p], r.w[q0:q]) || !slices.Equal(rel[p0:p], r.rel[q0:q]) {
			touched = append(touched, d)
		}
	}
	return touched
}

// freshRow is row v as c holds it, in arrays of its own (weights and
// relations shared when uniform).
func freshRow(v int32, c *CSR) blockRow {
	var u uniform
	u.add(c.W, c.Rel)
	w, rel, shared := u.arrays(len(c.Idx))
	if !shared {
		w, rel = append(w, c.W...), append(rel, c.Rel...)
	}
	return blockRow{v: v, idx: slices.Clone(c.Idx), w: w, rel: rel}
}

// mergedInRow is in row d: old entries from unchanged sources and the
// fresh ones, by source (a source's entries are all old or all fresh).
func mergedInRow(in *Blocks, d int32, isChanged func(int32) bool, fresh []inEntry) blockRow {
	var idx []int32
	var w []float32
	var rel []int32
	if int(d) < in.n {
		idx, w, rel = in.Row(int(d))
	}
	size := len(idx) + len(fresh) // at most: the changed sources' old entries go
	var u uniform
	u.add(w, rel)
	for _, e := range fresh {
		u.addOne(e.w, e.rel)
	}
	r := blockRow{v: d, idx: make([]int32, 0, size)}
	rw, rr, shared := u.arrays(size)
	p, i := 0, 0
	for p < len(idx) || i < len(fresh) {
		if p < len(idx) && isChanged(idx[p]) {
			p++
			continue
		}
		if p < len(idx) && (i == len(fresh) || idx[p] < fresh[i].src) {
			r.idx = append(r.idx, idx[p])
			if !shared {
				rw, rr = append(rw, w[p]), append(rr, rel[p])
			}
			p++
			continue
		}
		e := fresh[i]
		r.idx = append(r.idx, e.src)
		if !shared {
			rw, rr = append(rw, e.w), append(rr, e.rel)
		}
		i++
	}
	r.w, r.rel = rw[:len(r.idx):len(r.idx)], rr[:len(r.idx):len(r.idx)]
	return r
}
