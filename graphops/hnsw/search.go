package hnsw

import (
	"fmt"
	"sort"
	"unsafe"

	"github.com/gleaner-rag/gleaner/engine"
)

// MaxEf bounds a search's candidate list.
const MaxEf = 1 << 14

// cand is a node and its inner product with the query.
type cand struct {
	id  int32
	sim float32
}

// closer orders candidates: higher similarity, then lower id (so equal
// scores never depend on visiting order).
func closer(a, b cand) bool { return a.sim > b.sim || (a.sim == b.sim && a.id < b.id) }

// heap is a binary heap of candidates; top is the best when best is true,
// else the worst.
type heap struct {
	h    []cand
	best bool
}

func (h *heap) less(i, j int) bool {
	if h.best {
		return closer(h.h[i], h.h[j])
	}
	return closer(h.h[j], h.h[i])
}

func (h *heap) push(c cand) {
	h.h = append(h.h, c)
	for i := len(h.h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.h[i], h.h[p] = h.h[p], h.h[i]
		i = p
	}
}

func (h *heap) pop() cand {
	top := h.h[0]
	last := len(h.h) - 1
	h.h[0] = h.h[last]
	h.h = h.h[:last]
	h.down()
	return top
}

// replaceTop puts c in the top's place: a push and a pop in one sift, for
// a full heap whose top c beats.
func (h *heap) replaceTop(c cand) {
	h.h[0] = c
	h.down()
}

// down sifts the top into place.
func (h *heap) down() {
	n := len(h.h)
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h.h[i], h.h[m] = h.h[m], h.h[i]
		i = m
	}
}

// workspace is one search's scratch: visit stamps over every node, the
// two heaps, and the gather buffers for a node's links.
type workspace struct {
	// stamp is 2 bytes a node (hnswlib's visited list): at 10⁶ nodes a
	// build's visits land in 2 MB per worker rather than 4, more of it in
	// cache.
	stamp []uint16
	epoch uint16
	cands heap // best first: the frontier
	found heap // worst first: the ef best so far
	ids   []int32
	sims  []float32
	// dot scores rows exactly; search scores them for the walks, which a
	// build may point at codes of the rows (Options.SearchCodes).
	dot, search Dot
	// a build's exact scores of a search's candidates (builder.ranked)
	exIDs  []int32
	exSims []float32
	exact  []cand
	// a build's entries to the next layer down (builder.plan)
	entries []cand
}

func newWorkspace(n, m0 int) *workspace {
	return &workspace{stamp: make([]uint16, n), cands: heap{best: true}, ids: make([]int32, 0, m0), sims: make([]float32, m0)}
}

// begin starts a new visit: stamps from earlier ones no longer count.
func (w *workspace) begin() {
	w.epoch++
	if w.epoch == 0 { // wrapped: clear once every 2¹⁶ searches
		clear(w.stamp)
		w.epoch = 1
	}
	w.cands.h, w.found.h = w.cands.h[:0], w.found.h[:0]
}

// visit marks v visited and says whether it was not yet.
func (w *workspace) visit(v int32) bool {
	if w.stamp[v] == w.epoch {
		return false
	}
	w.stamp[v] = w.epoch
	return true
}

// prefetchLinks starts loading node v's link slots on layer l while the
// walk expands the node before it (hnswlib does the same): a node's links
// are rarely in cache, and the frontier's next best is often the next
// node expanded.
func (g *Graph) prefetchLinks(v int32, l int) {
	slots := g.links(v, l)
	p := unsafe.Pointer(&slots[0])
	// a loaded graph's slots need not start on a line
	lead := int(uintptr(p) & 63)
	prefetchLines(p, (lead+len(slots)*4+63)/64)
}

// unvisited marks the links visited and returns those that were not yet,
// in order. It does not branch on a stamp: the stamps of a node's links lie
// all over the array, and a branch on each would wait for its load before
// the next one is issued.
func (w *workspace) unvisited(links []int32) []int32 {
	ids := w.ids[:len(links)]
	n := 0
	for _, u := range links {
		if u < 0 {
			break
		}
		ids[n] = u
		fresh := 0
		if w.stamp[u] != w.epoch {
			fresh = 1
		}
		w.stamp[u] = w.epoch
		n += fresh
	}
	return ids[:n]
}

// searchLayer is the paper's SEARCH-LAYER: the ef nodes of layer l
// closest to q found by a best-first walk from the entry points, left in
// w.found (worst first).
func (g *Graph) searchLayer(X, q []float32, entries []cand, ef, l int, w *workspace) {
	w.begin()
	for _, e := range entries {
		if !w.visit(e.id) {
			continue // named twice
		}
		w.cands.push(e)
		w.found.push(e)
	}
	for len(w.found.h) > ef {
		w.found.pop()
	}
	for len(w.cands.h) > 0 {
		c := w.cands.pop()
		if len(w.found.h) >= ef && closer(w.found.h[0], c) {
			break // the frontier's best is worse than the worst kept
		}
		if len(w.cands.h) > 0 {
			g.prefetchLinks(w.cands.h[0].id, l)
		}
		w.ids = w.unvisited(g.links(c.id, l))
		w.search(X, g.Dims, w.ids, q, w.sims)
		for i, u := range w.ids {
			n := cand{u, w.sims[i]}
			switch {
			case len(w.found.h) < ef:
				w.cands.push(n)
				w.found.push(n)
			case closer(n, w.found.h[0]): // it displaces the worst kept
				w.cands.push(n)
				w.found.replaceTop(n)
			}
		}
	}
}

// descend walks from the entry down to layer stop+1 greedily (ef 1) and
// returns where it ends.
func (g *Graph) descend(X, q []float32, top, stop int, w *workspace) cand {
	e := cand{g.Entry, 0}
	w.ids = append(w.ids[:0], g.Entry)
	w.search(X, g.Dims, w.ids, q, w.sims)
	e.sim = w.sims[0]
	for l := top; l > stop; l-- {
		g.searchLayer(X, q, []cand{e}, 1, l, w)
		e = w.found.h[0]
	}
	return e
}

// Search returns the k rows of X (the matrix the graph was built over)
// with the highest inner product with q that a walk keeping ef candidates
// finds (ef is raised to k), best first, ties to the lower row, scored by
// dot (nil: GoDot). It is safe for concurrent use.
func (g *Graph) Search(X, q []float32, k, ef int, dot Dot) ([]engine.Hit, error) {
	if err := g.checkSearch(X, q, ef); err != nil {
		return nil, err
	}
	if g.N == 0 || k <= 0 {
		return nil, nil
	}
	return g.walk(X, q, k, ef, dot, func(w *workspace) []cand {
		return []cand{g.descend(X, q, int(g.Levels[g.Entry]), 0, w)}
	}), nil
}

// walk is the bottom layer's search keeping ef candidates (raised to k)
// from the entries start gives (on the walk's workspace, its dot set),
// and its best k.
func (g *Graph) walk(X, q []float32, k, ef int, dot Dot, start func(w *workspace) []cand) []engine.Hit {
	k = min(k, g.N)
	ef = max(ef, k)
	w := g.workspace()
	defer g.pool.Put(w)
	w.dot = orGo(dot)
	w.search = w.dot
	g.searchLayer(X, q, start(w), ef, 0, w)
	return best(w.found.h, k)
}

// SearchFrom is Search's bottom-layer walk started from the rows named in
// from (another search's answer, say) rather than from the top layer's
// entry: the walk keeps the best ef of those rows and of every row it
// reaches, so its top k score at least as well, rank for rank, as from's
// best k. A row named twice counts once; no rows is Search. It is safe for
// concurrent use.
func (g *Graph) SearchFrom(X, q []float32, from []int32, k, ef int, dot Dot) ([]engine.Hit, error) {
	if err := g.checkSearch(X, q, ef); err != nil {
		return nil, err
	}
	for i, v := range from {
		if v < 0 || int(v) >= g.N {
			return nil, fmt.Errorf("hnsw: start row %d (at %d) is not one of the graph's %d", v, i, g.N)
		}
	}
	if len(from) == 0 {
		return g.Search(X, q, k, ef, dot)
	}
	if k <= 0 {
		return nil, nil
	}
	return g.walk(X, q, k, ef, dot, func(w *workspace) []cand {
		entries, sims := make([]cand, len(from)), make([]float32, len(from))
		w.search(X, g.Dims, from, q, sims)
		for i, v := range from {
			entries[i] = cand{v, sims[i]}
		}
		return entries
	}), nil
}

// checkSearch checks a search's shapes and ef.
func (g *Graph) checkSearch(X, q []float32, ef int) error {
	switch {
	case len(q) != g.Dims:
		return fmt.Errorf("hnsw: query of %d values, graph of %d", len(q), g.Dims)
	case len(X) != g.N*g.Dims:
		return fmt.Errorf("hnsw: matrix of %d values, graph over %d×%d", len(X), g.N, g.Dims)
	case ef < 1 || ef > MaxEf:
		return fmt.Errorf("hnsw: ef must be in [1, %d], got %d", MaxEf, ef)
	}
	return nil
}

func (g *Graph) workspace() *workspace {
	if w, ok := g.pool.Get().(*workspace); ok {
		return w
	}
	return newWorkspace(g.N, g.m0())
}

// best is the k closest candidates of found, best first.
func best(found []cand, k int) []engine.Hit {
	c := append([]cand(nil), found...)
	sort.Slice(c, func(i, j int) bool { return closer(c[i], c[j]) })
	out := make([]engine.Hit, min(k, len(c)))
	for i := range out {
		out[i] = engine.Hit{Index: c[i].id, Score: c[i].sim}
	}
	return out
}
