package graphops

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/gleaner-rag/gleaner/internal/parallel"
)

// Rewrite makes a graph over n vertices from old's out rows and added
// edges (old's in rows, when they are the out rows' transpose, spare a
// transpose where the rows keep their numbers): old row u becomes row rowOf[u] (−1: dropped), keeping the entries
// p for which keep(u, p) gives a destination. The result equals
// Build(n, edges, true) where edges lists the kept entries (u, then p,
// ascending) followed by added, but it walks rows in order on one
// goroutine and allocates little more than the result: a live commit
// rewrites the graph with most rows unchanged, beside queries, and
// Build's edge list, order and parallel sorts were most of its garbage.
// It yields its core where ctx asks (parallel.Yield).
func Rewrite(ctx context.Context, oldGraph *Graph, n int, rowOf []int32, keep func(u int, p int64) (int32, bool), added []Edge) (*Graph, error) {
	old := &oldGraph.Out
	if n < 0 || len(rowOf) != old.N() {
		return nil, fmt.Errorf("graphops: %d row numbers for %d rows, into %d vertices", len(rowOf), old.N(), n)
	}
	for i, e := range added {
		if e.Src < 0 || int(e.Src) >= n || e.Dst < 0 || int(e.Dst) >= n {
			return nil, fmt.Errorf("graphops: edge %d (%d→%d) outside %d vertices", i, e.Src, e.Dst, n)
		}
	}
	oldOf, err := invertRows(rowOf, n)
	if err != nil {
		return nil, err
	}
	groups, order := groupBySource(added, n)
	size := len(old.Idx) + len(added) // at least what is kept plus added
	out := CSR{Ptr: make([]int64, n+1), Idx: make([]int32, 0, size), W: make([]float32, 0, size), Rel: make([]int32, 0, size)}
	var row []Edge     // the row being sorted, reused
	next := 0          // the entry count at which to yield next
	var changed []bool // with in place: the rows whose entries differ from their old row's
	inPlace := keepsNumbers(oldGraph, rowOf, n)
	if inPlace {
		changed = make([]bool, n)
	}
	for v := range n {
		if len(out.Idx) >= next || v%4096 == 0 {
			parallel.Yield(ctx)
			next = len(out.Idx) + yieldEvery
		}
		start := len(out.Idx)
		if u := oldOf[v]; u >= 0 {
			for p := old.Ptr[u]; p < old.Ptr[u+1]; p++ {
				d, ok := keep(int(u), p)
				if !ok {
					continue
				}
				if d < 0 || int(d) >= n {
					return nil, fmt.Errorf("graphops: row %d entry %d kept as vertex %d of %d", u, p, d, n)
				}
				out.Idx, out.W, out.Rel = append(out.Idx, d), append(out.W, old.W[p]), append(out.Rel, relAt(old, p))
			}
		}
		for _, i := range order[groups[v]:groups[v+1]] {
			e := added[i]
			out.Idx, out.W, out.Rel = append(out.Idx, e.Dst), append(out.W, e.W), append(out.Rel, e.Rel)
		}
		row = sortRow(&out, start, row)
		out.Ptr[v+1] = int64(len(out.Idx))
		if inPlace {
			changed[v] = !sameRow(old, v, &out, start)
		}
	}
	if inPlace {
		return &Graph{Out: out, In: patchIn(ctx, oldGraph, &out, changed)}, nil
	}
	return &Graph{Out: out, In: transposeRel(ctx, &out, n)}, nil
}

// yieldEvery is how many entries Rewrite writes between yields (tens of
// microseconds).
const yieldEvery = 16384

// invertRows is the old row of each new one (−1: none), checking that no
// two old rows become one.
func invertRows(rowOf []int32, n int) ([]int32, error) {
	oldOf := make([]int32, n)
	for i := range oldOf {
		oldOf[i] = -1
	}
	for u, v := range rowOf {
		if v < 0 {
			continue
		}
		if int(v) >= n || oldOf[v] >= 0 {
			return nil, fmt.Errorf("graphops: old row %d becomes row %d, outside %d rows or taken", u, v, n)
		}
		oldOf[v] = int32(u)
	}
	return oldOf, nil
}

// groupBySource orders edges' indexes by source, stably: source v's are
// order[groups[v]:groups[v+1]].
func groupBySource(edges []Edge, n int) (groups []int32, order []int32) {
	groups = make([]int32, n+1)
	for _, e := range edges {
		groups[e.Src+1]++
	}
	for v := range n {
		groups[v+1] += groups[v]
	}
	order = make([]int32, len(edges))
	fill := slices.Clone(groups[:n])
	for i, e := range edges {
		order[fill[e.Src]] = int32(i)
		fill[e.Src]++
	}
	return groups, order
}

func relAt(c *CSR, p int64) int32 {
	if c.Rel == nil {
		return 0
	}
	return c.Rel[p]
}

// sortRow sorts c's last row, from start, by destination then relation,
// stably (as Build orders a row), when it is not in order already; buf is
// scratch, returned for reuse.
func sortRow(c *CSR, start int, buf []Edge) []Edge {
	inOrder := true
	for p := start + 1; p < len(c.Idx) && inOrder; p++ {
		inOrder = c.Idx[p-1] < c.Idx[p] || (c.Idx[p-1] == c.Idx[p] && c.Rel[p-1] <= c.Rel[p])
	}
	if inOrder {
		return buf
	}
	buf = buf[:0]
	for p := start; p < len(c.Idx); p++ {
		buf = append(buf, Edge{Dst: c.Idx[p], W: c.W[p], Rel: c.Rel[p]})
	}
	slices.SortStableFunc(buf, func(a, b Edge) int {
		return cmp.Or(cmp.Compare(a.Dst, b.Dst), cmp.Compare(a.Rel, b.Rel))
	})
	for i, e := range buf {
		c.Idx[start+i], c.W[start+i], c.Rel[start+i] = e.Dst, e.W, e.Rel
	}
	return buf
}

// transposeRel is c's other direction over n vertices, weights and
// relations along: row d lists its sources ascending and, for one source,
// in c's row order, which is how Build orders the in rows.
func transposeRel(ctx context.Context, c *CSR, n int) CSR {
	t := CSR{Ptr: make([]int64, n+1), Idx: make([]int32, len(c.Idx)), W: make([]float32, len(c.Idx)), Rel: make([]int32, len(c.Idx))}
	for _, d := range c.Idx {
		t.Ptr[d+1]++
	}
	for v := range n {
		t.Ptr[v+1] += t.Ptr[v]
	}
	fill := slices.Clone(t.Ptr[:n])
	next := int64(0)
	for v := range n {
		if c.Ptr[v] >= next {
			parallel.Yield(ctx)
			next = c.Ptr[v] + yieldEvery
		}
		for p := c.Ptr[v]; p < c.Ptr[v+1]; p++ {
			d := c.Idx[p]
			q := fill[d]
			t.Idx[q], t.W[q], t.Rel[q] = int32(v), c.W[p], c.Rel[p]
			fill[d]++
		}
	}
	return t
}
