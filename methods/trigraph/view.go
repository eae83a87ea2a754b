package trigraph

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/internal/memo"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

// errNoOrder is a filtered query on a Tri-Graph built before filters: it
// lacks the passages' mention order a view is numbered from.
var errNoOrder = fmt.Errorf("this index's Tri-Graph was built before filters; build it again (gleaner graph build --kind trigraph --index <dir>) to serve filtered queries: %w", retrieve.ErrFilterUnsupported)

// maxViews bounds the views an index keeps (each holds its own mention
// tables, entity vectors and PageRank plan); more distinct filters in turn
// rebuild theirs.
const maxViews = 16

// viewKey names a view: the filter's set, and whether consecutive
// passages are joined (the PageRank plan depends on it).
type viewKey struct {
	allow    *filter.Set
	adjacent bool
}

// viewCache is an index's views, shared by its methods.
type viewCache = memo.LRU[viewKey, viewResult]

type viewResult struct {
	g   *graph
	err error
}

// A view is the Tri-Graph of the allowed passages alone, as a build over
// those passages would number and weigh it: entities and sentences in
// order of first mention among them, their mentions, occurrences and
// PageRank edges, and W's rows recomputed from their sentences and
// vectors when a query reaches them. Nothing of another passage enters
// it, so a filtered query's results equal a rebuild's and say nothing of
// the passages filtered out. A view is made once per filter set (an ACL,
// repeated on every request, is one set) and is safe for concurrent use.
//
// viewOf returns the view of tg over allow, made once per set and kept
// among the index's last maxViews.
func viewOf(tg *TriGraph, allow *filter.Set, allowedTitle func(string) bool, adjacent bool, dims int, be engine.Backend) (*graph, error) {
	r := tg.views.Get(viewKey{allow, adjacent}, func() viewResult {
		g, err := newView(tg, allow, allowedTitle, dims, be)
		return viewResult{g, err}
	})
	return r.g, r.err
}

func newView(tg *TriGraph, allow *filter.Set, allowedTitle func(string) bool, dims int, be engine.Backend) (*graph, error) {
	if tg.order.sentences.Ptr == nil {
		return nil, errNoOrder
	}
	v := &graph{whole: tg, passages: []int32{}} // never nil: nil means the whole index
	local := make([]int32, tg.Passages)         // index node → view passage, −1 when filtered out
	for p := range tg.Passages {
		local[p] = -1
		if allow.Has(p) {
			local[p] = int32(len(v.passages))
			v.passages = append(v.passages, int32(p))
		}
	}
	// A sentence's entity stands unless only the title gazetteer found it
	// and no allowed node has that title: a build over the allowed passages
	// would not know the title.
	kept := func(q int64) bool {
		return tg.order.titleOnly[q] == 0 || allowedTitle(tg.Entities[tg.SentEnts.Idx[q]])
	}
	sentKept := make([]bool, tg.Sentences)
	for s := range sentKept {
		for q := tg.SentEnts.Ptr[s]; q < tg.SentEnts.Ptr[s+1] && !sentKept[s]; q++ {
			sentKept[s] = kept(q)
		}
	}
	mentions := passageMentions(tg, v.passages, kept) // per view passage: its entities, in first-mention order
	ent, entOld := firstSeen(len(tg.Entities), mentions)
	_, v.sentences = firstSeen(tg.Sentences, rowsOf(tg.order.sentences, v.passages, func(s int32) bool { return sentKept[s] }))
	g := &graphops.TriGraph{Passages: len(v.passages), Sentences: len(v.sentences), Entities: make([]string, len(entOld))}
	for e, old := range entOld {
		g.Entities[e] = tg.Entities[old]
	}
	g.SentEnts = resorted(remapRows(tg.SentEnts, v.sentences, ent, kept))
	g.EntSents = graphops.Transpose(g.SentEnts, len(entOld))
	g.PassEnts = graphops.SortRows(viewPassEnts(tg, v.passages, mentions, ent))
	g.Occur = remapRows(tg.Occur, entOld, local, nil)
	// The sentence vectors, the bulk, are read through v.sentences.
	v.tg = &TriGraph{TriGraph: g, EntityVecs: gatherRows(tg.EntityVecs, entOld, dims), Meta: tg.Meta}
	v.tg.Meta.Entities, v.tg.Meta.Sentences, v.tg.Meta.Mentions = len(entOld), len(v.sentences), len(g.PassEnts.Idx)
	g.WRows = neighbourRows(v.tg, be, dims, tg.Meta.Neighbours)
	return v, nil
}

// passageMentions is, per passage, the entities its sentences' kept
// entries mention, in the passage's first-mention order.
func passageMentions(tg *TriGraph, passages []int32, kept func(int64) bool) [][]int32 {
	out := make([][]int32, len(passages))
	has := map[int32]bool{}
	for i, p := range passages {
		clear(has)
		for _, s := range tg.order.sentences.Neighbors(int(p)) {
			for q := tg.SentEnts.Ptr[s]; q < tg.SentEnts.Ptr[s+1]; q++ {
				if kept(q) {
					has[tg.SentEnts.Idx[q]] = true
				}
			}
		}
		for _, e := range tg.order.entities[tg.PassEnts.Ptr[p]:tg.PassEnts.Ptr[p+1]] {
			if has[e] {
				out[i] = append(out[i], e)
			}
		}
	}
	return out
}

// viewPassEnts is PassEnts's rows of the passages, keeping the entities
// each mentions in the view (renamed by ent), with their counts.
func viewPassEnts(tg *TriGraph, passages []int32, mentions [][]int32, ent []int32) graphops.CSR {
	out := graphops.CSR{Ptr: make([]int64, len(passages)+1), Idx: []int32{}, W: []float32{}}
	for i, p := range passages {
		for q := tg.PassEnts.Ptr[p]; q < tg.PassEnts.Ptr[p+1]; q++ {
			if e := tg.PassEnts.Idx[q]; slices.Contains(mentions[i], e) {
				out.Idx, out.W = append(out.Idx, ent[e]), append(out.W, tg.PassEnts.W[q])
			}
		}
		out.Ptr[i+1] = int64(len(out.Idx))
	}
	return out
}

// rowsOf is the rows of c for the given row numbers, keeping the entries
// keep accepts.
func rowsOf(c graphops.CSR, rows []int32, keep func(int32) bool) [][]int32 {
	out := make([][]int32, len(rows))
	for i, r := range rows {
		for _, x := range c.Neighbors(int(r)) {
			if keep(x) {
				out[i] = append(out[i], x)
			}
		}
	}
	return out
}

// neighbourRows computes W's rows of a view's Tri-Graph t as they are
// asked, a block at a time on be as the build computes them, keeping each
// block.
func neighbourRows(t *TriGraph, be engine.Backend, dims int, o graphops.NeighbourOptions) func(int32) ([]int32, []float32, error) {
	var mu sync.Mutex
	blocks := map[int]graphops.CSR{}
	return func(e int32) ([]int32, []float32, error) {
		b := int(e) / graphops.NeighbourBlock
		mu.Lock()
		rows, ok := blocks[b]
		mu.Unlock()
		if !ok {
			// Computed outside the lock: two queries may both compute a block,
			// alike. Not cancelled with a query: the block is kept for others.
			var err error
			if rows, err = t.NeighbourRows(context.Background(), be, t.EntityVecs, dims, b, o); err != nil {
				return nil, nil, err
			}
			mu.Lock()
			blocks[b] = rows
			mu.Unlock()
		}
		i := int(e) - b*graphops.NeighbourBlock
		lo, hi := rows.Ptr[i], rows.Ptr[i+1]
		return rows.Idx[lo:hi], rows.W[lo:hi], nil
	}
}

// resorted sorts each row of an unweighted CSR by column.
func resorted(c graphops.CSR) graphops.CSR {
	rows := make([][]int32, c.N())
	for i := range rows {
		rows[i] = c.Neighbors(i)
	}
	return graphops.RowsCSR(rows)
}

// firstSeen numbers the items of the rows in order of first appearance:
// old→new (−1 for an item in none of them) and new→old.
func firstSeen(n int, rows [][]int32) (toNew, toOld []int32) {
	toNew = make([]int32, n)
	for i := range toNew {
		toNew[i] = -1
	}
	for _, row := range rows {
		for _, x := range row {
			if toNew[x] < 0 {
				toNew[x] = int32(len(toOld))
				toOld = append(toOld, x)
			}
		}
	}
	return toNew, toOld
}

// remapRows is the CSR whose row i is c's row rows[i] with each column j
// renamed cols[j], dropping those renamed −1 and the entries q keep (when
// set) refuses; weights follow when c has them. The columns keep their
// order.
func remapRows(c graphops.CSR, rows []int32, cols []int32, keep func(q int64) bool) graphops.CSR {
	out := graphops.CSR{Ptr: make([]int64, len(rows)+1), Idx: []int32{}}
	if c.W != nil {
		out.W = []float32{}
	}
	for i, r := range rows {
		for q := c.Ptr[r]; q < c.Ptr[r+1]; q++ {
			if j := cols[c.Idx[q]]; j >= 0 && (keep == nil || keep(q)) {
				out.Idx = append(out.Idx, j)
				if c.W != nil {
					out.W = append(out.W, c.W[q])
				}
			}
		}
		out.Ptr[i+1] = int64(len(out.Idx))
	}
	return out
}

// gatherRows copies the rows of a row-major matrix of width d.
func gatherRows(m []float32, rows []int32, d int) []float32 {
	out := make([]float32, 0, len(rows)*d)
	for _, r := range rows {
		out = append(out, m[int(r)*d:(int(r)+1)*d]...)
	}
	return out
}
