package ivf

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops/hnsw"
	"github.com/gleaner-rag/gleaner/internal/vecmath"
)

// Index is a built inverted file. Its arrays are what an index section
// stores; an Index made from stored arrays must pass Check before use. An
// Index is read-only after Build or Check: any number of goroutines may
// search it.
type Index struct {
	N, Dims int
	Lists   int
	// Centroids holds Lists unit rows of Dims values.
	Centroids []float32
	// Offsets[l]..Offsets[l+1] are the positions in IDs of list l's rows.
	Offsets []int64
	// IDs holds every row once, list by list, ascending within a list.
	IDs []int32
	// Codes and Scales, when built (Options.Codes), hold the rows of IDs
	// in its order as int8 codes, Dims per row, and one scale per row
	// (engine.Quantize's int8): SearchCodes reads them.
	Codes  []int8
	Scales []float32

	all     []int32 // 0..Lists−1: the centroids' ids for Dot
	longest int     // the most rows in one list
	pool    sync.Pool
}

// prepare derives what a search needs from the arrays.
func (ix *Index) prepare() {
	ix.all = identity(ix.Lists)
	ix.longest = 0
	for l := range ix.Lists {
		ix.longest = max(ix.longest, int(ix.Offsets[l+1]-ix.Offsets[l]))
	}
}

// Check verifies an index read from storage against the matrix it will
// search (n rows of dims values): every size, offsets that rise from 0 to
// n, every row filed exactly once and in order within its list, and finite
// centroids. Search trusts what Check passed.
func (ix *Index) Check(n, dims int) error {
	switch {
	case ix.N != n || ix.Dims != dims:
		return fmt.Errorf("ivf: index over %d×%d, matrix %d×%d", ix.N, ix.Dims, n, dims)
	case ix.Lists < 0 || ix.Lists > MaxLists || ix.Lists > n || (n > 0 && ix.Lists == 0):
		return fmt.Errorf("ivf: %d lists for %d rows", ix.Lists, n)
	case len(ix.Centroids) != ix.Lists*dims || len(ix.Offsets) != ix.Lists+1 || len(ix.IDs) != n:
		return fmt.Errorf("ivf: %d centroid values, %d offsets, %d ids for %d lists over %d×%d",
			len(ix.Centroids), len(ix.Offsets), len(ix.IDs), ix.Lists, n, dims)
	case ix.Offsets[0] != 0 || ix.Offsets[ix.Lists] != int64(n):
		return fmt.Errorf("ivf: offsets run from %d to %d, want 0 to %d", ix.Offsets[0], ix.Offsets[ix.Lists], n)
	}
	for i, x := range ix.Centroids {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("ivf: centroid %d value %d is %v", i/dims, i%dims, x)
		}
	}
	for l := range ix.Lists {
		if lo, hi := ix.Offsets[l], ix.Offsets[l+1]; lo > hi || hi > int64(n) {
			return fmt.Errorf("ivf: list %d: offsets %d to %d, of %d rows", l, lo, hi, n)
		}
	}
	if err := ix.checkCodes(); err != nil {
		return err
	}
	seen := make([]bool, n)
	for l := range ix.Lists {
		if err := ix.checkList(l, seen); err != nil {
			return err
		}
	}
	ix.prepare()
	return nil
}

// checkCodes checks the codes' shape and that every scale is finite and
// not negative; an index may hold none.
func (ix *Index) checkCodes() error {
	if ix.Codes == nil && ix.Scales == nil {
		return nil
	}
	if len(ix.Codes) != ix.N*ix.Dims || len(ix.Scales) != ix.N {
		return fmt.Errorf("ivf: %d codes and %d scales for %d rows of %d", len(ix.Codes), len(ix.Scales), ix.N, ix.Dims)
	}
	for i, s := range ix.Scales {
		if !(s >= 0 && s <= math.MaxFloat32) {
			return fmt.Errorf("ivf: the codes of position %d have scale %v", i, s)
		}
	}
	return nil
}

// checkList checks list l's rows: in range, ascending, not seen before.
func (ix *Index) checkList(l int, seen []bool) error {
	lo, hi := ix.Offsets[l], ix.Offsets[l+1] // checked: lo ≤ hi ≤ n
	for i := lo; i < hi; i++ {
		v := ix.IDs[i]
		switch {
		case v < 0 || int(v) >= len(seen):
			return fmt.Errorf("ivf: list %d: row %d out of range", l, v)
		case seen[v]:
			return fmt.Errorf("ivf: list %d: row %d filed twice", l, v)
		case i > lo && v <= ix.IDs[i-1]:
			return fmt.Errorf("ivf: list %d: rows out of order at %d", l, v)
		}
		seen[v] = true
	}
	return nil
}

// workspace holds a search's buffers: the centroid scores, the probed
// lists, and per worker a list's row scores and a top k.
type workspace struct {
	cs    []float32
	order []int32
	parts []part
}

type part struct {
	sc  []float32
	top topK
}

func (ix *Index) workspace(workers int) *workspace {
	w, ok := ix.pool.Get().(*workspace)
	if !ok {
		w = &workspace{cs: make([]float32, ix.Lists), order: make([]int32, 0, ix.Lists)}
	}
	for len(w.parts) < workers {
		w.parts = append(w.parts, part{sc: make([]float32, ix.longest)})
	}
	return w
}

// minShare is the fewest bytes a search has a worker read: a second
// worker for a short scan costs about what it saves (on the 2-core VM,
// 10⁵ × 256 vectors: no gain over the 0.8 MB of codes at nprobe 32, and
// a gain over 2.4 MB of codes and 3.2 MB of float32 rows, measured by a
// reviewing helper).
var minShare = 1 << 20 // a variable so that the tests can share small lists

// MaxWorkers bounds a search's goroutines; MaxRescore a code search's
// candidates per hit.
const (
	MaxWorkers = 256
	MaxRescore = 1 << 12
)

// ScoreCodes scores contiguous int8 rows with their scales, as
// engine.CodeScorer does; nil in SearchCodes: GoScoreCodes.
type ScoreCodes func(codes []int8, scale []float32, d int, q, out []float32)

// GoScoreCodes is the portable ScoreCodes: four float32 accumulators, then
// the scale.
func GoScoreCodes(codes []int8, scale []float32, d int, q, out []float32) {
	for r, s := range scale {
		out[r] = vecmath.DotCodes(codes[r*d:(r+1)*d], q) * s
	}
}

// Search returns q's best k rows of X (the matrix the index was built
// over) among the rows of its nprobe best lists, best first (the lower
// row on a tie), scored by dot (nil: hnsw.GoDot). At nprobe ≥ Lists it
// scores every row: the exact top k. Up to workers goroutines share the
// lists (the caller is one; on average each reads at least a MiB); the
// hits do not depend on their number.
func (ix *Index) Search(X, q []float32, k, nprobe, workers int, dot Dot) ([]engine.Hit, error) {
	if err := ix.checkSearch(X, q, nprobe, workers); err != nil || ix.N == 0 || k <= 0 {
		return nil, err
	}
	if dot == nil {
		dot = hnsw.GoDot
	}
	return ix.search(X, q, min(k, ix.N), nprobe, workers, dot, nil), nil
}

// SearchCodes is Search reading the lists' int8 codes (a quarter of
// float32's bytes) instead of their rows: it keeps the rescore·k rows whose
// codes score best, scores those again over X with dot, and returns the
// best k, so every score is Search's; a row of Search's top k is missed
// only when its code score falls outside the candidates. An index built
// without codes is an error.
func (ix *Index) SearchCodes(X, q []float32, k, nprobe, workers, rescore int, dot Dot, score ScoreCodes) ([]engine.Hit, error) {
	switch err := ix.checkSearch(X, q, nprobe, workers); {
	case err != nil:
		return nil, err
	case rescore < 1 || rescore > MaxRescore:
		return nil, fmt.Errorf("ivf: rescore must be in [1, %d], got %d", MaxRescore, rescore)
	case ix.N == 0 || k <= 0:
		return nil, nil
	case ix.Codes == nil:
		return nil, fmt.Errorf("ivf: the index holds no codes (build it with Codes)")
	}
	if dot == nil {
		dot = hnsw.GoDot
	}
	if score == nil {
		score = GoScoreCodes
	}
	k = min(k, ix.N)
	keep := ix.N
	if k < ix.N/rescore { // rescore·k < N, without overflow
		keep = rescore * k
	}
	cands := ix.search(X, q, keep, nprobe, workers, dot, score)
	ids := make([]int32, len(cands))
	for i, h := range cands {
		ids[i] = h.Index
	}
	sc := make([]float32, len(ids))
	dot(X, ix.Dims, ids, q, sc)
	var top topK
	top.reset(k)
	for i, v := range ids {
		top.offer(v, sc[i])
	}
	return top.sorted(), nil
}

// checkSearch rejects a search's arguments out of range.
func (ix *Index) checkSearch(X, q []float32, nprobe, workers int) error {
	switch {
	case len(q) != ix.Dims:
		return fmt.Errorf("ivf: query of %d values, index of %d", len(q), ix.Dims)
	case len(X) != ix.N*ix.Dims:
		return fmt.Errorf("ivf: matrix of %d values, index over %d×%d", len(X), ix.N, ix.Dims)
	case nprobe < 1 || nprobe > MaxProbe:
		return fmt.Errorf("ivf: nprobe must be in [1, %d], got %d", MaxProbe, nprobe)
	case workers < 1 || workers > MaxWorkers:
		return fmt.Errorf("ivf: workers must be in [1, %d], got %d", MaxWorkers, workers)
	}
	return nil
}

// search keeps the best keep rows of q's nprobe best lists, scored by dot
// over X, or with codes (when not nil) over the lists' codes.
func (ix *Index) search(X, q []float32, keep, nprobe, workers int, dot Dot, codes ScoreCodes) []engine.Hit {
	nprobe = min(nprobe, ix.Lists)
	w := ix.workspace(workers)
	defer ix.pool.Put(w)
	lists, rows := ix.probe(q, nprobe, keep, dot, w)
	perRow := 4 * ix.Dims // float32 rows
	if codes != nil {
		perRow = ix.Dims
	}
	workers = min(workers, len(lists), max(1, rows*perRow/minShare))
	var wg sync.WaitGroup
	for p := 1; p < workers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ix.scan(X, q, lists, p, workers, keep, dot, codes, &w.parts[p])
		}()
	}
	ix.scan(X, q, lists, 0, workers, keep, dot, codes, &w.parts[0]) // the caller takes a share
	wg.Wait()
	all := &w.parts[0].top
	for p := 1; p < workers; p++ {
		for _, h := range w.parts[p].top.h {
			all.offer(h.Index, h.Score)
		}
	}
	return all.sorted()
}

// scan keeps in pt the best keep rows of every step-th list from the
// from-th (workers take turns down the probe order, so each gets lists of
// every rank), scored by dot, or by codes when not nil.
func (ix *Index) scan(X, q []float32, lists []int32, from, step, keep int, dot Dot, codes ScoreCodes, pt *part) {
	pt.top.reset(keep)
	d := ix.Dims
	for i := from; i < len(lists); i += step {
		lo, hi := ix.Offsets[lists[i]], ix.Offsets[lists[i]+1]
		ids := ix.IDs[lo:hi]
		if codes != nil {
			codes(ix.Codes[lo*int64(d):hi*int64(d)], ix.Scales[lo:hi], d, q, pt.sc)
		} else {
			dot(X, d, ids, q, pt.sc)
		}
		for j, v := range ids {
			pt.top.offer(v, pt.sc[j])
		}
	}
}

// probe is the nprobe nonempty lists whose centroids score best against
// q (the lower list on a tie), in that order, and after them as many more
// as it takes for the lists to hold keep rows: a search never returns
// fewer than the k asked for because its lists were empty or short.
func (ix *Index) probe(q []float32, nprobe, keep int, dot Dot, w *workspace) ([]int32, int) {
	dot(ix.Centroids, ix.Dims, ix.all, q, w.cs)
	order := ix.best(w, nprobe)
	rows := 0
	for _, l := range order {
		rows += ix.size(l)
	}
	if rows < keep { // rare: rank every list and go on down
		first := len(order)
		order = ix.best(w, ix.Lists) // the same lists first, in the same order
		for i, l := range order[first:] {
			if rows >= keep {
				order = order[:first+i]
				break
			}
			rows += ix.size(l)
		}
	}
	w.order = order
	return order, rows
}

// best is the n nonempty lists whose centroids score best in w.cs, best
// first.
func (ix *Index) best(w *workspace, n int) []int32 {
	t := &w.parts[0].top
	t.reset(n)
	for l, s := range w.cs {
		if ix.size(int32(l)) > 0 {
			t.offer(int32(l), s)
		}
	}
	order := w.order[:0]
	for _, h := range t.sorted() {
		order = append(order, h.Index)
	}
	return order
}

// size is how many rows list l holds.
func (ix *Index) size(l int32) int { return int(ix.Offsets[l+1] - ix.Offsets[l]) }

// topK keeps the best k of the (id, score) pairs offered: a binary heap
// whose root is the worst kept.
type topK struct {
	k int
	h []engine.Hit
}

func (t *topK) reset(k int) { t.k, t.h = k, t.h[:0] }

// worse orders by score, then the higher id as the worse.
func worse(a, b engine.Hit) bool {
	return a.Score < b.Score || (a.Score == b.Score && a.Index > b.Index)
}

func (t *topK) offer(id int32, s float32) {
	c := engine.Hit{Index: id, Score: s}
	switch {
	case len(t.h) < t.k:
		t.h = append(t.h, c)
		t.up(len(t.h) - 1)
	case worse(t.h[0], c):
		t.h[0] = c
		t.down(0)
	}
}

func (t *topK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !worse(t.h[i], t.h[p]) {
			return
		}
		t.h[i], t.h[p] = t.h[p], t.h[i]
		i = p
	}
}

func (t *topK) down(i int) {
	for {
		c := 2*i + 1
		if c >= len(t.h) {
			return
		}
		if c+1 < len(t.h) && worse(t.h[c+1], t.h[c]) {
			c++
		}
		if !worse(t.h[c], t.h[i]) {
			return
		}
		t.h[i], t.h[c] = t.h[c], t.h[i]
		i = c
	}
}

// sorted is a new slice of the kept pairs, best first.
func (t *topK) sorted() []engine.Hit {
	out := slices.Clone(t.h)
	slices.SortFunc(out, func(a, b engine.Hit) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
	return out
}

// Longest is the most rows in one list.
func (ix *Index) Longest() int { return ix.longest }
