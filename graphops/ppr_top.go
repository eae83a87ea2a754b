package graphops

import (
	"cmp"
	"container/heap"
	"context"
	"math"
	"slices"
)

// PPRTop is how a SolveTop ended.
type PPRTop struct {
	Sweeps    int     // Gauss–Seidel sweeps run
	Certified bool    // stopped before Tol: the top k were certain
	Bound     float64 // then: every entry is within Bound of the exact π
}

// SolveTop is Solve for a caller that keeps only the k largest of π's
// first n entries, ranked by their float32 values: it may stop before Tol
// once that ranking is certain. After a sweep that changed x by δ in L1,
// the residual of the (leaf-eliminated, exact) system is at most d·δ (each
// row's neighbours moved by at most what the sweep moved them, and the
// transition's columns sum to at most 1), so ‖x − π‖₁ ≤ (d·δ + r)/(1 − d)
// =: E, r the sums' rounding, since ‖(I − dP)⁻¹‖₁ ≤ 1/(1 − d) (on the
// core, the eliminated leaves' columns keep that bound; a leaf's error is
// d·share times its parent's). When, down the first k+1 of x's
// ranking, float32(x_a − E) > float32(x_b + E) for each neighbouring pair,
// the exact π's float32 ranking of those k, and the set, are the same as
// x's (rounding to float32 is monotone): the solve stops and returns x,
// each entry within E of π. Otherwise (ties, or a gap under the bound) it
// runs to Tol like Solve. Plans with dangling vertices, whose restart
// weight depends on x, always run Solve. A check costs a pass over the
// first n entries, so one runs when E falls below half the smallest gap
// the last one failed on, or three sweeps after it.
func (pl *PPRPlan) SolveTop(ctx context.Context, reset []float64, o PPROptions, n, k int) ([]float64, PPRTop, error) {
	if len(pl.dangling) > 0 || n < 1 || k < 1 {
		pi, it, err := pl.Solve(ctx, reset, o)
		return pi, PPRTop{Sweeps: it}, err
	}
	if err := o.Validate(); err != nil {
		return nil, PPRTop{}, err
	}
	n = min(n, pl.n)
	pi := make([]float64, pl.n)
	if err := normalizeReset(pi, reset); err != nil {
		return nil, PPRTop{}, err
	}
	d := o.Damping
	c := 1 - d // no dangling mass
	inv := pl.invFor(d)
	w := pl.getWork()
	defer pl.work.Put(w)
	x := w.x
	pl.startCore(x, w.rc, pi, d)
	tops := topCheck{n: n, k: k, need: math.Inf(1)}
	for it := 1; it <= o.MaxIter; it++ {
		if err := ctx.Err(); err != nil {
			return nil, PPRTop{Sweeps: it}, err
		}
		diff := pl.sweep(x, w.rc, inv, d, c)
		if diff < o.Tol {
			return pl.expand(x, pi, d, 0), PPRTop{Sweeps: it}, nil
		}
		// The sums' rounding adds at most (row length + 4) ulps of π's
		// total, 1, to the residual.
		e := (d*diff + float64(pl.maxRow+4)*epsilon) / (1 - d)
		if e > tops.need && it-tops.last < 3 {
			continue
		}
		if tops.last = it; tops.certain(pl, x, pi, c, d, e) {
			return pl.expand(x, pi, d, 0), PPRTop{Sweeps: it, Certified: true, Bound: e}, nil
		}
	}
	return pl.expand(x, pi, d, 0), PPRTop{Sweeps: o.MaxIter}, ErrNoConvergence
}

const epsilon = 0x1p-52

// getWork returns pooled scratch, or new scratch.
func (pl *PPRPlan) getWork() *pprWork {
	if w, ok := pl.work.Get().(*pprWork); ok {
		return w
	}
	return &pprWork{x: make([]float64, len(pl.core)), rc: make([]float64, len(pl.core))}
}

// startCore sets the core's iterate and reset from the normalized reset
// pi: a leaf's restart reaches its parent damped once.
func (pl *PPRPlan) startCore(x, rc, pi []float64, d float64) {
	for k, v := range pl.core {
		rc[k], x[k] = pi[v], pi[v]
	}
	for i, l := range pl.leaves {
		rc[pl.parent[i]] += d * pi[l]
	}
}

// topCheck certifies the ranking of the k largest of a solve's first n
// entries. need is half the smallest gap the last failed check saw: the
// next check runs once the bound is below it, or three sweeps after the
// last (the gaps move as the solve converges); last is that sweep.
type topCheck struct {
	n, k int
	need float64
	last int
	top  []scoredVertex // descending
}

type scoredVertex struct {
	v int32
	x float64
}

// certain reports whether the ranking of the k largest of x's first n
// entries (leaves computed from their parents with restart weight c) is
// certain with every entry within e of π.
func (t *topCheck) certain(pl *PPRPlan, x, pi []float64, c, d, e float64) bool {
	t.collect(pl, x, pi, c, d)
	need := math.Inf(1)
	for i := 0; i+1 < len(t.top) && i < t.k; i++ {
		a, b := t.top[i].x, t.top[i+1].x
		if float32(a-e) <= float32(b+e) {
			need = min(need, (a-b)/2)
		}
	}
	if math.IsInf(need, 1) {
		return true
	}
	t.need = need
	return false
}

// collect keeps the k+1 largest of the first n entries in t.top, largest
// first: a min-heap of them while scanning (O(n log k); k may be as large
// as n), then sorted.
func (t *topCheck) collect(pl *PPRPlan, x, pi []float64, c, d float64) {
	h := vertexHeap(t.top[:0])
	m := min(t.k, t.n-1) + 1 // k+1 without overflow
	for v := 0; v < t.n; v++ {
		y := pl.entry(x, pi, c, d, v)
		switch {
		case len(h) < m:
			heap.Push(&h, scoredVertex{v: int32(v), x: y})
		case y > h[0].x:
			h[0] = scoredVertex{v: int32(v), x: y}
			heap.Fix(&h, 0)
		}
	}
	slices.SortFunc(h, func(a, b scoredVertex) int { return cmp.Compare(b.x, a.x) })
	t.top = h
}

// vertexHeap is a min-heap of scored vertices.
type vertexHeap []scoredVertex

func (h vertexHeap) Len() int           { return len(h) }
func (h vertexHeap) Less(i, j int) bool { return h[i].x < h[j].x }
func (h vertexHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *vertexHeap) Push(x any)        { *h = append(*h, x.(scoredVertex)) }
func (h *vertexHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// entry is vertex v's value for the core iterate x: its core value, or a
// leaf's from its parent and its own (normalized) restart in pi.
func (pl *PPRPlan) entry(x, pi []float64, c, d float64, v int) float64 {
	if k := pl.coreOf[v]; k >= 0 {
		return x[k]
	}
	i := pl.leafAt[v]
	return d*pl.leafP[i]*x[pl.parent[i]] + c*pi[v]
}
