package ivf

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops/hnsw"
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
	seen := make([]bool, n)
	for l := range ix.Lists {
		if err := ix.checkList(l, seen); err != nil {
			return err
		}
	}
	ix.prepare()
	return nil
}

// checkList checks list l's rows: in range, ascending, not seen before.
func (ix *Index) checkList(l int, seen []bool) error {
	lo, hi := ix.Offsets[l], ix.Offsets[l+1]
	if lo > hi {
		return fmt.Errorf("ivf: list %d: offsets %d > %d", l, lo, hi)
	}
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

// MaxWorkers bounds a search's goroutines.
const MaxWorkers = 256

// Search returns q's best k rows of X (the matrix the index was built
// over) among the rows of its nprobe best lists, best first (the lower
// row on a tie), scored by dot (nil: hnsw.GoDot). At nprobe ≥ Lists it
// scores every row: the exact top k. workers goroutines share the lists
// (one runs inline); the hits do not depend on their number.
func (ix *Index) Search(X, q []float32, k, nprobe, workers int, dot Dot) ([]engine.Hit, error) {
	switch {
	case len(q) != ix.Dims:
		return nil, fmt.Errorf("ivf: query of %d values, index of %d", len(q), ix.Dims)
	case len(X) != ix.N*ix.Dims:
		return nil, fmt.Errorf("ivf: matrix of %d values, index over %d×%d", len(X), ix.N, ix.Dims)
	case nprobe < 1 || nprobe > MaxProbe:
		return nil, fmt.Errorf("ivf: nprobe must be in [1, %d], got %d", MaxProbe, nprobe)
	case workers < 1 || workers > MaxWorkers:
		return nil, fmt.Errorf("ivf: workers must be in [1, %d], got %d", MaxWorkers, workers)
	}
	if ix.N == 0 || k <= 0 {
		return nil, nil
	}
	if dot == nil {
		dot = hnsw.GoDot
	}
	nprobe = min(nprobe, ix.Lists)
	workers = min(workers, nprobe)
	w := ix.workspace(workers)
	defer ix.pool.Put(w)
	lists := ix.probe(q, nprobe, dot, w)
	k = min(k, ix.N)
	if workers == 1 {
		ix.scan(X, q, lists, 0, 1, k, dot, &w.parts[0])
		return w.parts[0].top.sorted(), nil
	}
	var wg sync.WaitGroup
	for p := 1; p < workers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ix.scan(X, q, lists, p, workers, k, dot, &w.parts[p])
		}()
	}
	ix.scan(X, q, lists, 0, workers, k, dot, &w.parts[0]) // the caller takes a share
	wg.Wait()
	all := &w.parts[0].top
	for p := 1; p < workers; p++ {
		for _, h := range w.parts[p].top.h {
			all.offer(h.Index, h.Score)
		}
	}
	return all.sorted(), nil
}

// scan keeps in pt the best k rows of every step-th list from the
// from-th: workers take turns down the probe order, so each gets lists of
// every rank.
func (ix *Index) scan(X, q []float32, lists []int32, from, step, k int, dot Dot, pt *part) {
	pt.top.reset(k)
	for i := from; i < len(lists); i += step {
		l := lists[i]
		ids := ix.IDs[ix.Offsets[l]:ix.Offsets[l+1]]
		dot(X, ix.Dims, ids, q, pt.sc)
		for j, v := range ids {
			pt.top.offer(v, pt.sc[j])
		}
	}
}

// probe is the nprobe lists whose centroids score best against q (the
// lower list on a tie), in that order.
func (ix *Index) probe(q []float32, nprobe int, dot Dot, w *workspace) []int32 {
	dot(ix.Centroids, ix.Dims, ix.all, q, w.cs)
	t := &w.parts[0].top
	t.reset(nprobe)
	for l, s := range w.cs {
		t.offer(int32(l), s)
	}
	order := w.order[:0]
	for _, h := range t.sorted() {
		order = append(order, h.Index)
	}
	w.order = order
	return order
}

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
