package hnsw

import (
	"fmt"
	"math"
	"sync"
)

// Graph is a built HNSW graph. Its arrays are what an index stores; a
// Graph made from stored arrays must pass Check before use. A Graph is
// read-only after Build or Check: any number of goroutines may search it.
type Graph struct {
	N, Dims int
	M       int
	Entry   int32 // the node searches start from; −1 for an empty graph
	// Levels is each node's top layer.
	Levels []uint8
	// Layer0 holds each node's layer-0 links, 2M slots per node, −1 after
	// the last.
	Layer0 []int32
	// Upper holds the links of layers 1..Levels[v] of node v, M slots per
	// layer from UpperOff[v], −1 after the last.
	Upper    []int32
	UpperOff []int64

	pool sync.Pool // *workspace
}

// m0 is the most links a node keeps on layer 0.
func (g *Graph) m0() int { return 2 * g.M }

// links returns node v's link slots on layer l (−1 after the last).
func (g *Graph) links(v int32, l int) []int32 {
	if l == 0 {
		return g.Layer0[int(v)*g.m0() : (int(v)+1)*g.m0()]
	}
	at := g.UpperOff[v] + int64(l-1)*int64(g.M)
	return g.Upper[at : at+int64(g.M)]
}

// count is the number of links in slots (they end at the first −1).
func count(slots []int32) int {
	for i, v := range slots {
		if v < 0 {
			return i
		}
	}
	return len(slots)
}

// drawLevel is node v's top layer: ⌊−ln U · mL⌋ with mL = 1/ln M, U drawn
// from v and the seed alone (so it does not depend on insertion order).
func drawLevel(seed uint64, v int, m int) uint8 {
	x := splitmix(seed ^ splitmix(uint64(v)+0x9e3779b97f4a7c15))
	u := (float64(x>>11) + 1) / (1 << 53) // (0, 1]
	l := math.Floor(-math.Log(u) / math.Log(float64(m)))
	return uint8(min(l, MaxLevel))
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// upperOffsets lays out the upper layers: node v's M·Levels[v] slots.
func upperOffsets(levels []uint8, m int) []int64 {
	off := make([]int64, len(levels)+1)
	for v, l := range levels {
		off[v+1] = off[v] + int64(l)*int64(m)
	}
	return off
}

// Check verifies a graph read from storage against the matrix it will
// search (n rows of dims values): every size, every link in range and on
// a layer its target has, padding only after the last link, the entry on
// the top layer. Search trusts what Check passed.
func (g *Graph) Check(n, dims int) error {
	switch {
	case g.N != n || g.Dims != dims:
		return fmt.Errorf("hnsw: graph over %d×%d, matrix %d×%d", g.N, g.Dims, n, dims)
	case g.M < 2 || g.M > MaxM:
		return fmt.Errorf("hnsw: M %d out of [2, %d]", g.M, MaxM)
	case len(g.Levels) != n || len(g.Layer0) != n*2*g.M || len(g.UpperOff) != n+1:
		return fmt.Errorf("hnsw: arrays of %d levels, %d layer-0 slots, %d offsets for %d nodes at M %d",
			len(g.Levels), len(g.Layer0), len(g.UpperOff), n, g.M)
	case n == 0 && g.Entry != -1, n > 0 && (g.Entry < 0 || int(g.Entry) >= n):
		return fmt.Errorf("hnsw: entry %d for %d nodes", g.Entry, n)
	}
	if g.UpperOff[0] != 0 {
		return fmt.Errorf("hnsw: upper offsets start at %d", g.UpperOff[0])
	}
	top := uint8(0)
	for v, l := range g.Levels {
		if l > MaxLevel || g.UpperOff[v+1]-g.UpperOff[v] != int64(l)*int64(g.M) {
			return fmt.Errorf("hnsw: node %d: level %d with %d upper slots", v, l, g.UpperOff[v+1]-g.UpperOff[v])
		}
		top = max(top, l)
	}
	if n > 0 && g.Levels[g.Entry] != top {
		return fmt.Errorf("hnsw: entry %d on layer %d, the top is %d", g.Entry, g.Levels[g.Entry], top)
	}
	if int64(len(g.Upper)) != g.UpperOff[n] {
		return fmt.Errorf("hnsw: %d upper slots, offsets end at %d", len(g.Upper), g.UpperOff[n])
	}
	for v := range n {
		for l := 0; l <= int(g.Levels[v]); l++ {
			if err := g.checkLinks(int32(v), l); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *Graph) checkLinks(v int32, l int) error {
	slots := g.links(v, l)
	c := count(slots)
	for i, u := range slots {
		switch {
		case i >= c && u != -1:
			return fmt.Errorf("hnsw: node %d layer %d: link %d after the end", v, l, u)
		case i < c && (int(u) >= g.N || int(g.Levels[u]) < l):
			return fmt.Errorf("hnsw: node %d layer %d: link to %d, not a node of that layer", v, l, u)
		}
	}
	return nil
}
