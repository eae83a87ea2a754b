package seeder

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Graph is one query's candidate graph (stage 2's output) as the encoder
// reads it: node and relation inputs are PCA-reduced embeddings (Config.In
// values each), cosines are with the query in the embedder's own space.
type Graph struct {
	IDs    []int32   // the candidates' node ids (order of the rows)
	NodeIn []float32 // len(IDs) × In; nil to read rows of Table by id
	// Table, when NodeIn is nil, holds every node's reduced embedding (row
	// = node id), shared by all of a dataset's graphs.
	Table   []float32
	NodeCos []float32 // cos(q, v)
	Hops    []int     // hop at which K-hop-with-filtering kept each node (0: seed)
	Query   []float32 // In: the query's reduced embedding
	Rels    []Relation
	Edges   []Edge  // directed KG edges between candidates (both directions)
	Words   []int32 // the question's words in the model's vocabulary (Config.Words)
	// Linked marks the seeds dictionary linking found in the question (the
	// rest of hop 0 is filled by cosine); nil: none.
	Linked []bool
	// Eligible marks the nodes the heads may return (the answer-type
	// mask); nil: all.
	Eligible []bool
	// PathMass is Config.Paths+1 values per node (the text side's mass
	// after each hop and their weighted sum); nil when Config.Paths is 0.
	PathMass []float32
}

// Relation is one relation (or its inverse) as an edge input.
type Relation struct {
	In      []float32 // In: the relation name's reduced embedding
	Cos     float32   // cos(q, relation)
	Inverse bool
	ID      int32     // relation id for Config.Relations (−1: none)
	Path    []float32 // Config.Paths: the text side's probability per hop
}

// Edge is a directed KG edge between candidate rows, typed by Rels[Rel].
type Edge struct{ Src, Dst, Rel int32 }

// Nodes is the number of candidates.
func (g *Graph) Nodes() int { return len(g.IDs) }

// Validate checks the graph against c.
func (g *Graph) Validate(c Config) error {
	n := len(g.IDs)
	switch {
	case g.NodeIn == nil && !g.tableCovers(c):
		return fmt.Errorf("seeder: graph of %d nodes has no input rows (NodeIn) and a table of %d values that lacks some of its ids", n, len(g.Table))
	case g.NodeIn != nil && len(g.NodeIn) != n*c.In || len(g.NodeCos) != n || len(g.Hops) != n:
		return fmt.Errorf("seeder: graph of %d nodes has %d input values, %d cosines, %d hops (want %d, %d, %d)", n, len(g.NodeIn), len(g.NodeCos), len(g.Hops), n*c.In, n, n)
	case len(g.Query) != c.In:
		return fmt.Errorf("seeder: query input has %d values, want %d", len(g.Query), c.In)
	case g.Linked != nil && len(g.Linked) != n:
		return fmt.Errorf("seeder: linked-seed mask has %d values for %d nodes", len(g.Linked), n)
	case g.Eligible != nil && len(g.Eligible) != n:
		return fmt.Errorf("seeder: eligibility mask has %d values for %d nodes", len(g.Eligible), n)
	case len(g.PathMass) != n*c.nodePaths():
		return fmt.Errorf("seeder: graph of %d nodes has %d path-mass values, want %d", n, len(g.PathMass), n*c.nodePaths())
	}
	for i, r := range g.Rels {
		if len(r.In) != c.In {
			return fmt.Errorf("seeder: relation row %d has %d values, want %d", i, len(r.In), c.In)
		}
		if len(r.Path) != c.Paths {
			return fmt.Errorf("seeder: relation row %d has %d path values, want %d", i, len(r.Path), c.Paths)
		}
		if c.Relations > 0 && int(r.ID) >= c.Relations {
			return fmt.Errorf("seeder: relation row %d has id %d, the model knows %d relations", i, r.ID, c.Relations)
		}
	}
	for _, w := range g.Words {
		if w < 0 || int(w) >= c.Words {
			return fmt.Errorf("seeder: question word %d outside a vocabulary of %d", w, c.Words)
		}
	}
	for i, e := range g.Edges {
		if e.Src < 0 || int(e.Src) >= n || e.Dst < 0 || int(e.Dst) >= n || e.Rel < 0 || int(e.Rel) >= len(g.Rels) {
			return fmt.Errorf("seeder: edge %d (%d→%d, relation %d) outside %d nodes and %d relations", i, e.Src, e.Dst, e.Rel, n, len(g.Rels))
		}
	}
	for i, h := range g.Hops {
		if h < 0 {
			return fmt.Errorf("seeder: node %d has hop %d", i, h)
		}
	}
	return nil
}

func (g *Graph) tableCovers(c Config) bool {
	for _, id := range g.IDs {
		if id < 0 || (int(id)+1)*c.In > len(g.Table) {
			return false
		}
	}
	return true
}

// input is row i's reduced embedding.
func (g *Graph) input(c Config, i int) []float32 {
	if g.NodeIn != nil {
		return g.NodeIn[i*c.In : (i+1)*c.In]
	}
	return g.Table[int(g.IDs[i])*c.In : (int(g.IDs[i])+1)*c.In]
}

// batch is the disjoint union of graphs as the network reads it: rows are
// each graph's candidates followed by its virtual node (when the config
// has one); attention edges are grouped by destination.
type batch[F Float] struct {
	n      int     // rows
	first  []int   // graph → first row
	vn     []int   // graph → virtual node row, or −1
	xn     []F     // n × nodeIn
	hop    []int   // n (clamped to MaxHop)
	xq     []F     // graphs × In
	nRel   int     // relation rows; edge-feature rows nRel, +1, +2 are expander, node→VN, VN→node
	xr     []F     // nRel × relIn
	relEmb []int32 // relation row → row of RelEmb (−1: none)
	words  [][]int32
	ptr    []int64
	src    []int32
	erow   []int32 // edge → edge-feature row
}

// graphEnd is one past graph gi's last row (its virtual node included).
func (b *batch[F]) graphEnd(gi int) int {
	if gi+1 < len(b.first) {
		return b.first[gi+1]
	}
	return b.n
}

// edge-feature rows after the relations.
const (
	rowExp = iota
	rowToVN
	rowFromVN
	extraRows
)

type attnEdge struct{ src, dst, row int32 }

// newBatch builds the union of gs under c.
func newBatch[F Float](c Config, gs []*Graph) (*batch[F], error) {
	b := &batch[F]{}
	for _, g := range gs {
		if err := g.Validate(c); err != nil {
			return nil, err
		}
		b.nRel += len(g.Rels)
	}
	var edges []attnEdge
	relBase := 0
	for _, g := range gs {
		base := b.n
		b.first = append(b.first, base)
		n := g.Nodes()
		b.n += n
		vn := -1
		if c.Virtual {
			vn = b.n
			b.n++
		}
		b.vn = append(b.vn, vn)
		for _, e := range g.Edges {
			edges = append(edges, attnEdge{int32(base) + e.Src, int32(base) + e.Dst, int32(relBase) + e.Rel})
		}
		for _, p := range expanderPairs(c, g.IDs) {
			edges = append(edges, attnEdge{int32(base + p[0]), int32(base + p[1]), int32(b.nRel + rowExp)})
		}
		if vn >= 0 {
			for i := 0; i < n; i++ {
				edges = append(edges, attnEdge{int32(base + i), int32(vn), int32(b.nRel + rowToVN)},
					attnEdge{int32(vn), int32(base + i), int32(b.nRel + rowFromVN)})
			}
		}
		relBase += len(g.Rels)
	}
	b.fill(c, gs)
	b.group(edges)
	return b, nil
}

// fill copies the node, query and relation inputs.
func (b *batch[F]) fill(c Config, gs []*Graph) {
	ni, ri, in := c.nodeIn(), c.relIn(), c.In
	b.xn, b.hop = make([]F, b.n*ni), make([]int, b.n)
	b.xq, b.xr = make([]F, len(gs)*in), make([]F, b.nRel*ri)
	r := 0
	for gi, g := range gs {
		copyF(b.xq[gi*in:(gi+1)*in], g.Query)
		for i := 0; i < g.Nodes(); i++ {
			row := b.xn[(b.first[gi]+i)*ni:]
			copyF(row[:in], g.input(c, i))
			row[in] = F(g.NodeCos[i])
			copyF(row[in+1:2*in+1], g.Query)
			if g.Linked != nil && g.Linked[i] {
				row[2*in+1] = 1
			}
			np := c.nodePaths()
			copyF(row[2*in+2:2*in+2+np], g.PathMass[i*np:(i+1)*np])
			b.hop[b.first[gi]+i] = min(g.Hops[i], c.MaxHop)
		}
		b.words = append(b.words, g.Words)
		for _, rel := range g.Rels {
			e := int32(-1)
			if c.Relations > 0 && rel.ID >= 0 {
				e = 2 * rel.ID
				if rel.Inverse {
					e++
				}
			}
			b.relEmb = append(b.relEmb, e)
			row := b.xr[r*ri : (r+1)*ri]
			copyF(row[:in], rel.In)
			row[in] = F(rel.Cos)
			copyF(row[in+1:2*in+1], g.Query)
			if rel.Inverse {
				row[2*in+1] = 1
			}
			copyF(row[2*in+2:], rel.Path)
			r++
		}
	}
}

// group sorts the attention edges by destination into CSR arrays (a
// counting sort: stable, linear).
func (b *batch[F]) group(edges []attnEdge) {
	b.ptr = make([]int64, b.n+1)
	for _, e := range edges {
		b.ptr[e.dst+1]++
	}
	for i := 0; i < b.n; i++ {
		b.ptr[i+1] += b.ptr[i]
	}
	next := slices.Clone(b.ptr[:b.n])
	b.src, b.erow = make([]int32, len(edges)), make([]int32, len(edges))
	for _, e := range edges {
		p := next[e.dst]
		next[e.dst]++
		b.src[p], b.erow[p] = e.src, e.row
	}
}

func copyF[F Float](dst []F, src []float32) {
	for i, v := range src {
		dst[i] = F(v)
	}
}

// expanderPairs returns the expander's directed pairs over a graph's rows:
// c Hamiltonian cycles through the nodes taken in node-id order and
// shuffled with the config's seed (so a graph gets the same cycles every
// epoch and at inference), each node linked to its predecessor in both
// directions (2cn pairs, parallel pairs kept); a graph of at most 10 nodes
// gets the complete graph instead, as Exphormer's generator does.
func expanderPairs(c Config, ids []int32) [][2]int {
	n := len(ids)
	if c.Cycles == 0 || n < 2 {
		return nil
	}
	var out [][2]int
	if n <= 10 {
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if i != j {
					out = append(out, [2]int{i, j})
				}
			}
		}
		return out
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Or(cmp.Compare(ids[a], ids[b]), cmp.Compare(a, b)) })
	rng := rand.New(rand.NewPCG(c.Seed, uint64(n)))
	perm := make([]int, n)
	for range c.Cycles {
		copy(perm, order)
		rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		for i := range perm {
			prev := perm[(i+n-1)%n]
			out = append(out, [2]int{perm[i], prev}, [2]int{prev, perm[i]})
		}
	}
	return out
}
