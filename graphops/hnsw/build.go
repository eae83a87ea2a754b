package hnsw

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gleaner-rag/gleaner/engine"
)

// maxBatch bounds an insertion batch. A batch's nodes cannot link to each
// other (their searches see the graph before the batch), so a batch is
// also at most 1/batchShare of the nodes already inserted: a node misses
// at most that share of its true neighbours, and later nodes link to it
// as to any other.
const (
	maxBatch   = 512
	batchShare = 64
)

// Build builds the graph over the n rows of X (row-major, d values each),
// inserting the rows in order. progress, when not nil, is called after
// each batch with the number of rows inserted. Cancellation is checked
// between batches. A row holding a NaN or an infinity is refused.
func Build(ctx context.Context, X []float32, n, d int, o Options, progress func(done int)) (*Graph, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	switch {
	case n < 0 || d <= 0 || len(X) != n*d:
		return nil, fmt.Errorf("hnsw: %d values for %d rows of %d", len(X), n, d)
	case n > math.MaxInt32:
		return nil, fmt.Errorf("hnsw: %d rows, at most %d", n, math.MaxInt32)
	}
	if i := engine.FirstNonFinite(X); i >= 0 {
		// a NaN or infinite score leaves closer no order, and the walks
		// and link choices nothing to go by
		return nil, fmt.Errorf("hnsw: row %d value %d is %v", i/d, i%d, X[i])
	}
	g := newGraph(n, d, o)
	if n == 0 {
		return g, nil
	}
	search, err := searchDot(X, n, d, o)
	if err != nil {
		return nil, err
	}
	// No batch has more than maxBatch nodes to share out, so more workers
	// than that would only hold visit stamps (2n bytes each).
	b := &builder{g: g, X: X, o: o, ws: make([]*workspace, min(o.Workers, maxBatch)), rescore: o.SearchCodes}
	for i := range b.ws {
		b.ws[i] = newWorkspace(n, g.m0())
		b.ws[i].dot, b.ws[i].search = orGo(o.Dot), search
	}
	for lo := 1; lo < n; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := min(n, lo+min(maxBatch, max(1, lo/batchShare)))
		b.insert(lo, hi)
		if progress != nil {
			progress(hi)
		}
		lo = hi
	}
	return g, nil
}

// searchDot is what the build's searches score: o.Dot, or under
// SearchCodes o.CodeDot over int8 codes of X quantized here.
func searchDot(X []float32, n, d int, o Options) (Dot, error) {
	if !o.SearchCodes {
		return orGo(o.Dot), nil
	}
	m, err := engine.Quantize(X, n, d, engine.QuantInt8)
	if err != nil {
		return nil, fmt.Errorf("hnsw: codes for the build: %w", err)
	}
	codeDot := o.CodeDot
	if codeDot == nil {
		codeDot = GoCodeDot
	}
	return func(_ []float32, d int, ids []int32, q, out []float32) { codeDot(m.I8, m.Scale, d, ids, q, out) }, nil
}

// newGraph lays out an empty graph: every node's level drawn, every slot
// −1, node 0 the entry.
func newGraph(n, d int, o Options) *Graph {
	levels := make([]uint8, n)
	for v := range levels {
		levels[v] = drawLevel(o.Seed, v, o.M)
	}
	off := upperOffsets(levels, o.M)
	g := &Graph{N: n, Dims: d, M: o.M, Entry: -1, Levels: levels,
		Layer0: filled(n*2*o.M, -1), Upper: filled(int(off[n]), -1), UpperOff: off}
	if n > 0 {
		g.Entry = 0
	}
	return g
}

func filled(n int, v int32) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// builder holds a build's state: the graph so far and a workspace per
// worker.
type builder struct {
	g  *Graph
	X  []float32
	o  Options
	ws []*workspace
	// rescore: the searches score codes, so their candidates are scored
	// again exactly before links are chosen among them (ranked).
	rescore bool
	// a batch's backlinks and their groups, kept for the next batch
	backs  []backlink
	groups [][]backlink
}

// backlink asks that src be linked from target on a layer.
type backlink struct {
	target, src int32
	layer       int
}

// insert adds rows [lo, hi): each row's links are chosen against the graph
// as it stands (in parallel), then written, then linked back from their
// targets (in parallel over targets, in row order within one).
func (b *builder) insert(lo, hi int) {
	g := b.g
	top := int(g.Levels[g.Entry])
	plans := make([][][]int32, hi-lo)
	b.parallel(hi-lo, func(w *workspace, i int) { plans[i] = b.plan(int32(lo+i), top, w) })
	backs := b.backs[:0]
	for i, layers := range plans {
		u := int32(lo + i)
		for l, links := range layers {
			copy(g.links(u, l), links)
			for _, t := range links {
				backs = append(backs, backlink{target: t, src: u, layer: l})
			}
		}
	}
	// A source names a target at most once a layer, so ordering by source
	// last keeps each group in row order, as a stable sort would; this
	// runs on one core while the others wait.
	slices.SortFunc(backs, compareBacklinks)
	groups := groupBacklinks(backs, b.groups[:0])
	b.backs, b.groups = backs, groups
	b.parallel(len(groups), func(w *workspace, i int) { b.linkBack(groups[i], w) })
	for u := lo; u < hi; u++ {
		if g.Levels[u] > g.Levels[g.Entry] {
			g.Entry = int32(u)
		}
	}
	b.linkRisen(lo, hi, top)
}

// linkRisen links the batch's nodes that rose above the old top layer to
// the new entry on the layers they share with it: their searches saw no
// node up there, and without this they would stay alone on those layers.
func (b *builder) linkRisen(lo, hi, top int) {
	g := b.g
	e := g.Entry
	for u := int32(lo); u < int32(hi); u++ {
		for l := top + 1; u != e && l <= int(min(g.Levels[u], g.Levels[e])); l++ {
			us, es := g.links(u, l), g.links(e, l)
			if cu, ce := count(us), count(es); cu < len(us) && ce < len(es) {
				us[cu], es[ce] = e, u
			}
		}
	}
}

// compareBacklinks orders backlinks by target, layer, then source.
func compareBacklinks(x, y backlink) int {
	if c := cmp.Compare(x.target, y.target); c != 0 {
		return c
	}
	if c := cmp.Compare(x.layer, y.layer); c != 0 {
		return c
	}
	return cmp.Compare(x.src, y.src)
}

// groupBacklinks splits sorted backlinks into runs of one (target, layer),
// appended to groups.
func groupBacklinks(backs []backlink, groups [][]backlink) [][]backlink {
	for i := 0; i < len(backs); {
		j := i + 1
		for j < len(backs) && backs[j].target == backs[i].target && backs[j].layer == backs[i].layer {
			j++
		}
		groups = append(groups, backs[i:j])
		i = j
	}
	return groups
}

// parallel runs fn(i) for i in [0, n) on the workers, each with its own
// workspace; small batches run inline.
func (b *builder) parallel(n int, fn func(w *workspace, i int)) {
	workers := min(len(b.ws), n)
	if workers <= 1 {
		for i := range n {
			fn(b.ws[0], i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(b.ws[k], i)
			}
		}()
	}
	wg.Wait()
}

// plan chooses node u's links on each of its layers that the graph has:
// the paper's INSERT, searching from the entry with efConstruction and
// selecting by the heuristic.
func (b *builder) plan(u int32, top int, w *workspace) [][]int32 {
	g, d := b.g, b.g.Dims
	q := b.X[int(u)*d : (int(u)+1)*d]
	lu := min(int(g.Levels[u]), top)
	entries := []cand{g.descend(b.X, q, top, lu, w)}
	out := make([][]int32, lu+1)
	for l := lu; l >= 0; l-- {
		g.searchLayer(b.X, q, entries, b.o.EfConstruction, l, w)
		// the next layer's walk starts from these in any order
		w.entries = append(w.entries[:0], w.found.h...)
		entries = w.entries
		out[l] = b.selectLinks(b.ranked(entries, q, w), g.M, w)
	}
	return out
}

// ranked is c best first for the heuristic: c itself sorted, or, when the
// search that found c scored codes, c scored by the exact Dot and sorted
// in w's buffers (good until the next call).
func (b *builder) ranked(c []cand, q []float32, w *workspace) []cand {
	if !b.rescore {
		slices.SortFunc(c, compareCands)
		return c
	}
	w.exIDs, w.exSims = w.exIDs[:0], slices.Grow(w.exSims[:0], len(c))[:len(c)]
	for _, x := range c {
		w.exIDs = append(w.exIDs, x.id)
	}
	w.dot(b.X, b.g.Dims, w.exIDs, q, w.exSims)
	w.exact = w.exact[:0]
	for i, id := range w.exIDs {
		w.exact = append(w.exact, cand{id, w.exSims[i]})
	}
	slices.SortFunc(w.exact, compareCands)
	return w.exact
}

// compareCands is closer as a three-way comparison.
func compareCands(x, y cand) int {
	switch {
	case closer(x, y):
		return -1
	case closer(y, x):
		return 1
	}
	return 0
}

// selectLinks is the paper's neighbour-selection heuristic (hnswlib's
// getNeighborsByHeuristic2): walking the candidates best first, keep one
// unless it is closer to a node already kept than to the base, up to m;
// with KeepPruned the slots left are filled with the closest dropped ones.
// Fewer than m candidates are all kept.
func (b *builder) selectLinks(c []cand, m int, w *workspace) []int32 {
	kept := make([]int32, 0, min(m, len(c)))
	if len(c) < m {
		for _, x := range c {
			kept = append(kept, x.id)
		}
		return kept
	}
	d := b.g.Dims
	var pruned []int32
	for _, x := range c {
		if len(kept) == m {
			break
		}
		w.dot(b.X, d, kept, b.X[int(x.id)*d:(int(x.id)+1)*d], w.sims)
		good := true
		for _, s := range w.sims[:len(kept)] {
			if s > x.sim {
				good = false
				break
			}
		}
		if good {
			kept = append(kept, x.id)
		} else {
			pruned = append(pruned, x.id)
		}
	}
	if b.o.KeepPruned { // the paper's keepPrunedConnections: fill up, closest first
		kept = append(kept, pruned[:min(len(pruned), m-len(kept))]...)
	}
	return kept
}

// linkBack adds the group's sources to its target's links on its layer;
// when they overflow the layer's slots, the heuristic chooses among the
// old links and the new.
func (b *builder) linkBack(group []backlink, w *workspace) {
	g, d := b.g, b.g.Dims
	t, l := group[0].target, group[0].layer
	slots := g.links(t, l)
	have := count(slots)
	if have+len(group) <= len(slots) {
		for i, bl := range group {
			slots[have+i] = bl.src
		}
		return
	}
	ids := append([]int32(nil), slots[:have]...)
	for _, bl := range group {
		ids = append(ids, bl.src)
	}
	sims := make([]float32, len(ids))
	w.dot(b.X, d, ids, b.X[int(t)*d:(int(t)+1)*d], sims)
	c := make([]cand, len(ids))
	for i := range ids {
		c[i] = cand{ids[i], sims[i]}
	}
	slices.SortFunc(c, compareCands)
	kept := b.selectLinks(c, len(slots), w)
	copy(slots, kept)
	for i := len(kept); i < len(slots); i++ {
		slots[i] = -1
	}
}
