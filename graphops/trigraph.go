package graphops

import (
	"cmp"
	"fmt"
	"math"
)

// TriGraph is NexusRAG's and LinearRAG's relation-free index
// (docs/methods.md §2.2): entities, sentences and passages, linked by
// mention. Sentences are not PageRank vertices; they only carry
// propagation from one entity to the others mentioned with it.
//
// Rows are sorted by column, except W's (heaviest first). A TriGraph is read-only once
// built and safe for concurrent use.
type TriGraph struct {
	Passages  int      // passages = the index's nodes, in index order
	Sentences int      // distinct sentence texts that mention ≥ 1 entity
	Entities  []string // distinct surface strings (case-sensitive); entity e is Entities[e]
	EntSents  CSR      // entity → the sentences that mention it (W nil)
	SentEnts  CSR      // sentence → the entities it mentions (W nil)
	// PassEnts lists, per passage, the entities NER found in it, with W the
	// case-sensitive count of the surface string in the passage text (the
	// PageRank edge weight before normalisation, §2.2).
	PassEnts CSR
	// Occur lists, per entity, the passages whose lowercased text contains
	// the lowercased surface string, with W the count (the passage bonus,
	// §2.5: precomputed once, never a per-query scan).
	Occur CSR
	// W is NexusRAG's neighbour matrix (§2.3): directed rows (j, w_ij),
	// heaviest first (ties: lower j first).
	W CSR
	// WRows, when set, gives W's rows on demand in place of W: a view of
	// the Tri-Graph over some passages (a filtered query) computes only
	// the rows its propagation reaches (NeighbourRow).
	WRows func(e int32) ([]int32, []float32, error)
}

// wReader reads W's rows for one propagation: a row WRows fails to give
// reads as empty, and err holds the first failure.
type wReader struct {
	t   *TriGraph
	err error
}

// row is row e of W.
func (r *wReader) row(e int32) ([]int32, []float32) {
	if r.t.WRows == nil {
		lo, hi := r.t.W.Ptr[e], r.t.W.Ptr[e+1]
		return r.t.W.Idx[lo:hi], r.t.W.W[lo:hi]
	}
	idx, w, err := r.t.WRows(e)
	if err != nil {
		r.err = cmp.Or(r.err, err)
		return nil, nil
	}
	return idx, w
}

// Validate checks the arrays of a TriGraph read from disk: pointer ranges,
// column bounds, finite non-negative weights.
func (t *TriGraph) Validate() error {
	ne := len(t.Entities)
	checks := []struct {
		name  string
		c     *CSR
		rows  int
		cols  int
		withW bool
	}{
		{"entity→sentence", &t.EntSents, ne, t.Sentences, false},
		{"sentence→entity", &t.SentEnts, t.Sentences, ne, false},
		{"passage→entity", &t.PassEnts, t.Passages, ne, true},
		{"entity→passage occurrences", &t.Occur, ne, t.Passages, true},
		{"neighbour matrix", &t.W, ne, ne, true},
	}
	for _, k := range checks {
		if err := validateRows(k.c, k.rows, k.cols, k.withW); err != nil {
			return fmt.Errorf("graphops: tri-graph %s: %w", k.name, err)
		}
	}
	return nil
}

// validateRows checks a CSR of rows×cols whose weights, when present, are
// finite and ≥ 0.
func validateRows(c *CSR, rows, cols int, withW bool) error {
	if len(c.Ptr) != rows+1 || c.Ptr[0] != 0 || c.Ptr[rows] != int64(len(c.Idx)) {
		return fmt.Errorf("pointers do not cover %d rows and %d entries", rows, len(c.Idx))
	}
	if (withW && len(c.W) != len(c.Idx)) || (!withW && len(c.W) != 0) { // an empty table reads back as nil
		return fmt.Errorf("%d weights for %d entries", len(c.W), len(c.Idx))
	}
	for v := 0; v < rows; v++ {
		if c.Ptr[v] > c.Ptr[v+1] {
			return fmt.Errorf("pointers decrease at row %d", v)
		}
	}
	for i, u := range c.Idx {
		if u < 0 || int(u) >= cols {
			return fmt.Errorf("entry %d names column %d of %d", i, u, cols)
		}
	}
	for i, w := range c.W {
		if !(w >= 0) || math.IsInf(float64(w), 0) {
			return fmt.Errorf("entry %d has weight %v", i, w)
		}
	}
	return nil
}

// PageRankGraph is the undirected weighted graph NexusRAG runs PageRank on
// (§2.2): vertices 0..Passages−1 are the passages (the index's node
// numbers), Passages+e is entity e. A passage–entity edge weighs the
// entity's count in the passage over the sum of the counts of that
// passage's entities; with adjacent, passage i and i+1 are joined with
// weight 1 (the reference joins consecutive chunks, across documents too).
func (t *TriGraph) PageRankGraph(adjacent bool) (*Adjacency, error) {
	np := t.Passages
	var es []Edge
	for p := 0; p < np; p++ {
		var sum float64
		for q := t.PassEnts.Ptr[p]; q < t.PassEnts.Ptr[p+1]; q++ {
			sum += float64(t.PassEnts.W[q])
		}
		for q := t.PassEnts.Ptr[p]; q < t.PassEnts.Ptr[p+1]; q++ {
			if c := float64(t.PassEnts.W[q]); c > 0 {
				es = append(es, Edge{Src: int32(p), Dst: int32(np) + t.PassEnts.Idx[q], W: float32(c / sum)})
			}
		}
		if adjacent && p+1 < np {
			es = append(es, Edge{Src: int32(p), Dst: int32(p + 1), W: 1})
		}
	}
	g, err := Build(np+len(t.Entities), es, false)
	if err != nil {
		return nil, err
	}
	return Undirected(g, true, nil), nil
}
