package seeder

import (
	"fmt"
)

// PathGraph is the directed multigraph a question's answer mass spreads
// over, by source: edge p leaves its row's node for Dst[p] along relation
// direction Dir[p] (2r: relation r forward, 2r+1: backward). A KG edge
// appears twice, once from each end.
type PathGraph struct {
	Ptr []int64
	Dst []int32
	Dir []int32
}

// N is the number of nodes.
func (g *PathGraph) N() int { return len(g.Ptr) - 1 }

// Validate checks the arrays against dirs relation directions.
func (g *PathGraph) Validate(dirs int) error {
	if len(g.Ptr) == 0 || g.Ptr[0] != 0 || int(g.Ptr[len(g.Ptr)-1]) != len(g.Dst) || len(g.Dir) != len(g.Dst) {
		return fmt.Errorf("seeder: path graph has %d row pointers for %d targets and %d directions", len(g.Ptr), len(g.Dst), len(g.Dir))
	}
	for i := 1; i < len(g.Ptr); i++ {
		if g.Ptr[i] < g.Ptr[i-1] {
			return fmt.Errorf("seeder: path graph row %d ends before it starts", i-1)
		}
	}
	n := g.N()
	for p, v := range g.Dst {
		if v < 0 || int(v) >= n || g.Dir[p] < 0 || int(g.Dir[p]) >= dirs {
			return fmt.Errorf("seeder: path graph edge %d (to %d, direction %d) outside %d nodes and %d directions", p, v, g.Dir[p], n, dirs)
		}
	}
	return nil
}

// minSpreadP is the smallest relation probability the spread follows:
// below it an edge carries nothing (forward and backward alike), which
// keeps a trained scorer's spread to the paths it believes in.
const minSpreadP = 1e-4

// Spread is the answer mass of a question: X[t][v] for t = 0..T is the
// mass at node v after t hops (X[0]: 1 on each seed), x_t(v) = min(1,
// Σ_{u→v} x_{t−1}(u)·p_t(dir)), and Y = Σ_t α_t·x_t. Only the nodes
// reached are listed.
type Spread struct {
	Active [][]int32   // per step, the nodes with mass
	X      [][]float64 // per step, dense over the graph's nodes
	sum    [][]float64 // per step, the mass before the clip at 1
	Y      []float64   // dense
	Nodes  []int32     // every node reached at any step ≥ 1, once
}

// Spread runs a question's reading over g from seeds; keep, when set, is
// the nodes the mass may reach (the others are not there at all).
func (p *Paths) Spread(g *PathGraph, seeds []int32, keep func(int32) bool) *Spread {
	n, T := g.N(), len(p.P)
	s := &Spread{Y: make([]float64, n)}
	x0 := make([]float64, n)
	var act []int32
	for _, v := range seeds {
		if v >= 0 && int(v) < n && x0[v] == 0 && (keep == nil || keep(v)) {
			x0[v] = 1
			act = append(act, v)
		}
	}
	s.X, s.sum, s.Active = [][]float64{x0}, [][]float64{nil}, [][]int32{act}
	reached := make([]bool, n)
	for t := 1; t <= T; t++ {
		pt := p.P[t-1]
		sum := make([]float64, n)
		seen := make([]bool, n) // not sum > 0: a product may underflow to 0
		var next []int32
		for _, u := range act {
			xu := s.X[t-1][u]
			for e := g.Ptr[u]; e < g.Ptr[u+1]; e++ {
				pr := pt[g.Dir[e]]
				if pr < minSpreadP {
					continue
				}
				v := g.Dst[e]
				if keep != nil && !keep(v) {
					continue
				}
				if !seen[v] {
					seen[v] = true
					next = append(next, v)
				}
				sum[v] += xu * pr
			}
		}
		x := make([]float64, n)
		for _, v := range next {
			x[v] = min(1, sum[v])
			s.Y[v] += p.Alpha[t-1] * x[v]
			if !reached[v] {
				reached[v] = true
				s.Nodes = append(s.Nodes, v)
			}
		}
		s.X, s.sum, s.Active = append(s.X, x), append(s.sum, sum), append(s.Active, next)
		act = next
	}
	return s
}

// back turns dY (dense) into the gradients of the reading: dP[t][dir]
// and dAlpha[t].
func (s *Spread) back(g *PathGraph, p *Paths, dY []float64) (dP [][]float64, dAlpha []float64) {
	T, n := len(p.P), g.N()
	dAlpha = make([]float64, T)
	dP = make([][]float64, T)
	dx := make([]float64, n) // d loss / d x_t, filled step by step
	for t := T; t >= 1; t-- {
		x, sum, pt := s.X[t], s.sum[t], p.P[t-1]
		dP[t-1] = make([]float64, len(pt))
		ds := make([]float64, n)
		for _, v := range s.Active[t] {
			dAlpha[t-1] += dY[v] * x[v]
			d := dx[v] + p.Alpha[t-1]*dY[v]
			if sum[v] < 1 { // the clip passes no gradient
				ds[v] = d
			}
		}
		prev := make([]float64, n)
		for _, u := range s.Active[t-1] {
			xu := s.X[t-1][u]
			for e := g.Ptr[u]; e < g.Ptr[u+1]; e++ {
				dir := g.Dir[e]
				pr := pt[dir]
				if pr < minSpreadP {
					continue
				}
				d := ds[g.Dst[e]]
				if d == 0 {
					continue
				}
				dP[t-1][dir] += xu * d
				prev[u] += pr * d
			}
		}
		dx = prev
	}
	return dP, dAlpha
}
