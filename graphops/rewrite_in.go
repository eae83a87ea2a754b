package graphops

import (
	"context"

	"github.com/gleaner-rag/gleaner/internal/parallel"
)

// A live commit that deletes in place keeps every vertex's number (a
// removed one loses its row; added ones come after): its graph's in rows
// are then the old in rows but where a changed out row reaches, so they
// are copied in runs and patched there, rather than transposed anew
// (a scatter over every edge, most of a commit's graph cost).

// keepsNumbers reports whether the rewrite keeps every old row's number
// (or drops the row), adds rows only after them, and old's in rows are
// its out rows' transpose with relations, so patchIn applies.
func keepsNumbers(old *Graph, rowOf []int32, n int) bool {
	m := len(old.Out.Idx)
	for _, c := range []*CSR{&old.Out, &old.In} {
		if c.N() != len(rowOf) || len(c.Idx) != m || len(c.W) != m || len(c.Rel) != m {
			return false // not a transpose pair with weights and relations: transposed anew
		}
	}
	if n < len(rowOf) {
		return false
	}
	for u, v := range rowOf {
		if v != int32(u) && v != -1 {
			return false
		}
	}
	return true
}

// sameRow reports whether out's row v, from start, equals old's row v
// (none when v is a new row).
func sameRow(old *CSR, v int, out *CSR, start int) bool {
	end := len(out.Idx)
	if v >= old.N() {
		return start == end
	}
	a, b := old.Ptr[v], old.Ptr[v+1]
	if int(b-a) != end-start {
		return false
	}
	for i := range end - start {
		p := a + int64(i)
		q := start + i
		if old.Idx[p] != out.Idx[q] || old.W[p] != out.W[q] || relAt(old, p) != out.Rel[q] {
			return false
		}
	}
	return true
}

// inEntry is one entry of an in row: the source, with its weight and
// relation.
type inEntry struct {
	dst, src int32
	w        float32
	rel      int32
}

// patchIn is out's transpose, made from old's in rows: a row no changed
// out row reaches (before or after) is copied; one that is reached keeps
// its entries from unchanged sources and takes the changed sources'
// entries from out, merged by source. Rows are ordered as transposeRel
// orders them.
func patchIn(ctx context.Context, old *Graph, out *CSR, changed []bool) CSR {
	n := out.N()
	oldN := old.In.N()
	touched := make([]bool, n)
	var fresh []inEntry // the changed sources' entries, by source then row order
	for v, ch := range changed {
		if !ch {
			continue
		}
		if v < oldN {
			for _, d := range old.Out.Neighbors(v) {
				touched[d] = true
			}
		}
		for p := out.Ptr[v]; p < out.Ptr[v+1]; p++ {
			d := out.Idx[p]
			touched[d] = true
			fresh = append(fresh, inEntry{d, int32(v), out.W[p], out.Rel[p]})
		}
	}
	fresh = byDestination(fresh, n)
	t := CSR{Ptr: make([]int64, n+1), Idx: make([]int32, 0, len(out.Idx)), W: make([]float32, 0, len(out.Idx)), Rel: make([]int32, 0, len(out.Idx))}
	in := &old.In
	f := 0 // the next fresh entry
	next := int64(0)
	for d := 0; d < n; {
		if int64(len(t.Idx)) >= next {
			parallel.Yield(ctx)
			next = int64(len(t.Idx)) + yieldEvery
		}
		if d < oldN && !touched[d] { // a run of rows copied as they were
			e := d
			for e < oldN && !touched[e] && e-d < 4096 {
				e++
			}
			base := int64(len(t.Idx)) - in.Ptr[d]
			t.Idx = append(t.Idx, in.Idx[in.Ptr[d]:in.Ptr[e]]...)
			t.W = append(t.W, in.W[in.Ptr[d]:in.Ptr[e]]...)
			t.Rel = append(t.Rel, in.Rel[in.Ptr[d]:in.Ptr[e]]...)
			for v := d; v < e; v++ {
				t.Ptr[v+1] = in.Ptr[v+1] + base
			}
			d = e
			continue
		}
		g := f
		for g < len(fresh) && fresh[g].dst == int32(d) {
			g++
		}
		mergeIn(&t, in, d, oldN, changed, fresh[f:g])
		f = g
		t.Ptr[d+1] = int64(len(t.Idx))
		d++
	}
	return t
}

// byDestination orders entries by destination, stably (a counting sort:
// a changed hub row brings hundreds of thousands of them).
func byDestination(es []inEntry, n int) []inEntry {
	if len(es) < 2 {
		return es
	}
	at := make([]int32, n+1)
	for _, e := range es {
		at[e.dst+1]++
	}
	for d := range n {
		at[d+1] += at[d]
	}
	out := make([]inEntry, len(es))
	for _, e := range es {
		out[at[e.dst]] = e
		at[e.dst]++
	}
	return out
}

// mergeIn appends row d: old's entries from unchanged sources and the
// fresh ones, by source (a source's entries are all old or all fresh).
func mergeIn(t, in *CSR, d, oldN int, changed []bool, fresh []inEntry) {
	var p, end int64
	if d < oldN {
		p, end = in.Ptr[d], in.Ptr[d+1]
	}
	i := 0
	for p < end || i < len(fresh) {
		if p < end && changed[in.Idx[p]] {
			p++
			continue
		}
		if p < end && (i == len(fresh) || in.Idx[p] < fresh[i].src) {
			t.Idx, t.W, t.Rel = append(t.Idx, in.Idx[p]), append(t.W, in.W[p]), append(t.Rel, in.Rel[p])
			p++
			continue
		}
		e := fresh[i]
		t.Idx, t.W, t.Rel = append(t.Idx, e.src), append(t.W, e.w), append(t.Rel, e.rel)
		i++
	}
}
