package graphops

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// PPROptions configures PageRank. Start from DefaultPPROptions: every field
// is used as given, and a zero damping, tolerance or iteration cap is an
// error rather than a default.
type PPROptions struct {
	Damping float64 // probability of following an edge, in (0, 1) (default 0.85; HippoRAG uses 0.5)
	Tol     float64 // stop when the L1 change of an iteration is below Tol (default 1e-10)
	MaxIter int     // iteration cap (default 1000)
}

// DefaultPPROptions are igraph's PageRank settings: damping 0.85, tolerance
// 1e-10, at most 1000 iterations.
func DefaultPPROptions() PPROptions { return PPROptions{Damping: 0.85, Tol: 1e-10, MaxIter: 1000} }

// Validate reports a setting PageRank cannot run with.
func (o PPROptions) Validate() error {
	if !(o.Damping > 0 && o.Damping < 1) || !(o.Tol > 0) || o.MaxIter < 1 {
		return fmt.Errorf("graphops: pagerank needs 0 < damping < 1, tol > 0, max iterations ≥ 1; got %+v (start from DefaultPPROptions)", o)
	}
	return nil
}

// ErrNoConvergence is returned (with the last iterate) when MaxIter is hit.
var ErrNoConvergence = errors.New("graphops: pagerank did not converge within the iteration cap")

// PersonalizedPageRank solves, with igraph's prpack semantics (docs/methods.md
// §2.5), π = d·(Pᵀπ + (Σ_{dangling} π)·r) + (1 − d)·r over the undirected
// weighted adjacency a, where P(u→v) = w_uv/strength(u) and r is reset
// normalised to sum 1; dangling vertices restart by r too. reset nil means
// uniform (plain PageRank). The result sums to 1.
//
// It iterates (Jacobi, in parallel over vertices) until the L1 change is
// below Tol; the error of the result is then below Tol·d/(1−d) in L1.
// Cancellation is checked every iteration.
func PersonalizedPageRank(ctx context.Context, a *Adjacency, reset []float64, o PPROptions) ([]float64, int, error) {
	if err := o.Validate(); err != nil {
		return nil, 0, err
	}
	r, err := normalizedReset(a.N(), reset)
	if err != nil {
		return nil, 0, err
	}
	x, next, t := append([]float64(nil), r...), make([]float64, a.N()), make([]float64, a.N())
	for it := 1; it <= o.MaxIter; it++ {
		if err := ctx.Err(); err != nil {
			return nil, it, err
		}
		dangling := scaleByStrength(a, x, t)
		diff := a.pull(t, r, o.Damping, dangling, next, x)
		x, next = next, x
		if diff < o.Tol {
			return x, it, nil
		}
	}
	return x, o.MaxIter, ErrNoConvergence
}

// normalizedReset checks reset and scales it to sum 1.
func normalizedReset(n int, reset []float64) ([]float64, error) {
	r := make([]float64, n)
	return r, normalizeReset(r, reset)
}

// normalizeReset checks reset and writes it to r (len(r) vertices),
// scaled to sum 1; a nil reset is uniform.
func normalizeReset(r, reset []float64) error {
	n := len(r)
	if reset == nil {
		for i := range r {
			r[i] = 1 / float64(n)
		}
		return nil
	}
	if len(reset) != n {
		return fmt.Errorf("graphops: reset vector has %d entries for %d vertices", len(reset), n)
	}
	var s float64
	for i, v := range reset {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("graphops: reset[%d] = %v; entries must be finite and ≥ 0", i, v)
		}
		s += v
	}
	if s == 0 {
		return errors.New("graphops: reset vector is all zeros")
	}
	for i, v := range reset {
		r[i] = v / s
	}
	return nil
}

// scaleByStrength sets t[u] = x[u]/strength(u) and returns the mass on
// dangling vertices.
func scaleByStrength(a *Adjacency, x, t []float64) float64 {
	var dangling float64
	for u, s := range a.Strength {
		if s == 0 {
			dangling += x[u]
			t[u] = 0
			continue
		}
		t[u] = x[u] / s
	}
	return dangling
}

// pull computes next[v] = d·(Σ_u w_uv·t[u] + dangling·r[v]) + (1−d)·r[v]
// and returns ‖next − x‖₁.
func (a *Adjacency) pull(t, r []float64, d, dangling float64, next, x []float64) float64 {
	n := a.N()
	parts := make([]float64, max(1, min(8, n/4096)))
	parallelChunks(n, len(parts), func(k, lo, hi int) {
		var diff float64
		for v := lo; v < hi; v++ {
			s := a.rowSum(v, t)
			y := d*(s+dangling*r[v]) + (1-d)*r[v]
			diff += math.Abs(y - x[v])
			next[v] = y
		}
		parts[k] = diff
	})
	var diff float64
	for _, p := range parts {
		diff += p
	}
	return diff
}

// rowSum is Σ_p w_p·t[Idx[p]] over v's row.
func (a *Adjacency) rowSum(v int, t []float64) float64 {
	idx := a.Idx[a.Ptr[v]:a.Ptr[v+1]]
	var s float64
	if a.W == nil {
		for _, u := range idx {
			s += t[u]
		}
		return s
	}
	w := a.W[a.Ptr[v]:a.Ptr[v+1]]
	for i, u := range idx {
		s += w[i] * t[u]
	}
	return s
}

// MaxPPRIter bounds the iterations PPRIterations allows for any damping.
const MaxPPRIter = 1_000_000

// PPRIterations allows twice the iterations a damping d close to 1 needs to
// reach tol (the error shrinks by d per iteration), capped at MaxPPRIter so
// that a damping of 1−1e-12 ends in ErrNoConvergence rather than running
// on.
func PPRIterations(d, tol float64) int {
	need := 2*math.Log(tol)/math.Log(d) + 100
	return int(min(need, MaxPPRIter))
}
