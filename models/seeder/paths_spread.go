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

// minSpreadP is the smallest share of the reading an edge follows at
// inference: below it the edge carries nothing, which keeps a trained
// scorer's spread to the paths it believes in. Training follows every edge
// (a skipped edge would pass no gradient, so a wrong belief could not be
// unlearned).
const minSpreadP = 1e-4

// Spread is the answer mass of a question: X[t][v] for t = 0..T is the
// mass at node v after t hops (X[0]: 1 on each seed),
//
//	x_t(v) = min(1, Σ_{u→v} x_{t−1}(u)·p_t(dir)/S_t),
//
// where S_t sums p_t over the distinct directions leaving the nodes with
// mass after t−1 hops towards nodes keep allows (those below the
// inference threshold count too): the reading is renormalised over the
// relations the walk can take. With TransferNet's global p_t the answer loss is lowered
// early by sending the mass along relations no node on the walk has, and
// on a KG with hundreds of relations training stalls there (PQL-3H dev:
// the text side's Hits@1 0.437; 0.883 renormalised). Renormalising per
// node instead keeps mass that should die (MetaQA 3-hop dev: 0.79 → 0.20).
// Y = Σ_t α_t·x_t. Only the nodes reached are listed.
type Spread struct {
	Active [][]int32   // per step, the nodes with mass
	X      [][]float64 // per step, dense over the graph's nodes
	sum    [][]float64 // per step, the mass before the clip at 1
	Y      []float64   // dense
	Nodes  []int32     // every node reached at any step ≥ 1, once
	keep   func(int32) bool
	minP   float64
}

// Spread runs a question's reading over g from seeds; keep, when set, is
// the nodes the mass may reach (the others are not there at all).
func (p *Paths) Spread(g *PathGraph, seeds []int32, keep func(int32) bool) *Spread {
	return p.spread(g, seeds, keep, minSpreadP)
}

// spread is Spread with edges carrying a share below minP skipped.
func (p *Paths) spread(g *PathGraph, seeds []int32, keep func(int32) bool, minP float64) *Spread {
	n, T := g.N(), len(p.P)
	s := &Spread{Y: make([]float64, n), keep: keep, minP: minP}
	x0 := make([]float64, n)
	var act []int32
	for _, v := range seeds {
		if v >= 0 && int(v) < n && x0[v] == 0 && s.kept(v) {
			x0[v] = 1
			act = append(act, v)
		}
	}
	s.X, s.sum, s.Active = [][]float64{x0}, [][]float64{nil}, [][]int32{act}
	reached := make([]bool, n)
	norm := &dirNorm{}
	for t := 1; t <= T; t++ {
		pt := p.P[t-1]
		sum := make([]float64, n)
		var next []int32
		if st := norm.total(g, s, act, pt); st > 0 {
			next = s.step(g, act, s.X[t-1], pt, st, sum)
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

// step moves the mass x of the nodes act along their edges, each carrying
// its direction's share of pt over st, into sum; it returns the nodes
// reached, in the order first reached.
func (s *Spread) step(g *PathGraph, act []int32, x, pt []float64, st float64, sum []float64) []int32 {
	seen := make([]bool, len(sum)) // not sum > 0: a product may underflow to 0
	var next []int32
	for _, u := range act {
		for e := g.Ptr[u]; e < g.Ptr[u+1]; e++ {
			v := g.Dst[e]
			pr := share(pt, g.Dir[e]) / st
			if !s.kept(v) || pr < s.minP {
				continue
			}
			if !seen[v] {
				seen[v] = true
				next = append(next, v)
			}
			sum[v] += x[u] * pr
		}
	}
	return next
}

func (s *Spread) kept(v int32) bool { return s.keep == nil || s.keep(v) }

// share is p_t of a direction, 0 for one the reading does not score (a
// graph with relations the scorer was not trained on).
func share(pt []float64, dir int32) float64 {
	if int(dir) >= len(pt) {
		return 0
	}
	return pt[dir]
}

// dirNorm sums p over the distinct directions leaving a step's nodes (to
// kept nodes), remembering them for the backward pass.
type dirNorm struct {
	seen []bool // by direction, cleared after each total
	dirs []int32
}

// total is S = Σ p over the distinct directions leaving nodes; it also
// lists them in n.dirs.
func (n *dirNorm) total(g *PathGraph, s *Spread, nodes []int32, pt []float64) float64 {
	n.dirs = n.dirs[:0]
	if len(n.seen) < len(pt) {
		n.seen = make([]bool, len(pt))
	}
	var st float64
	for _, u := range nodes {
		for e := g.Ptr[u]; e < g.Ptr[u+1]; e++ {
			dir := g.Dir[e]
			if int(dir) >= len(pt) || n.seen[dir] || !s.kept(g.Dst[e]) {
				continue
			}
			n.seen[dir] = true
			n.dirs = append(n.dirs, dir)
			st += pt[dir]
		}
	}
	for _, dir := range n.dirs {
		n.seen[dir] = false
	}
	return st
}

// back turns dY (dense) into the gradients of the reading: dP[t][dir]
// and dAlpha[t]. An edge e carries the share q(e) = p(dir e)/S_t, and
// ∂q(e)/∂p(d) = [d = dir e]/S_t − q(e)/S_t for every direction d counted
// in S_t.
func (s *Spread) back(g *PathGraph, p *Paths, dY []float64) (dP [][]float64, dAlpha []float64) {
	T, n := len(p.P), g.N()
	dAlpha = make([]float64, T)
	dP = make([][]float64, T)
	dx := make([]float64, n) // d loss / d x_t, filled step by step
	norm := &dirNorm{}
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
		st := norm.total(g, s, s.Active[t-1], pt)
		if st == 0 {
			dx = prev
			continue
		}
		var gt float64 // Σ_e x_u·q(e)·ds(dst e)
		for _, u := range s.Active[t-1] {
			xu := s.X[t-1][u]
			for e := g.Ptr[u]; e < g.Ptr[u+1]; e++ {
				v, dir := g.Dst[e], g.Dir[e]
				pr := share(pt, dir) / st
				d := ds[v]
				if !s.kept(v) || pr < s.minP || d == 0 {
					continue
				}
				dP[t-1][dir] += xu * d / st
				gt += xu * pr * d
				prev[u] += pr * d
			}
		}
		for _, dir := range norm.dirs {
			dP[t-1][dir] -= gt / st
		}
		dx = prev
	}
	return dP, dAlpha
}
