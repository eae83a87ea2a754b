package graphops

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/gleaner-rag/gleaner/engine"
)

// NeighbourOptions configure NexusRAG's entity neighbour matrix W
// (docs/methods.md §2.3). Start from DefaultNeighbourOptions; every field
// is used as given.
type NeighbourOptions struct {
	CoShare   float64 // co-occurrence row pruning: keep the top max(1, ⌊CoShare·nnz⌋) counts (0.1)
	CoCap     int     // … and at most CoCap of them (200)
	SimTopK   int     // cosine neighbours per entity, self excluded (ann_topk 10; exact here)
	Kappa     int     // κ: candidates taken from each channel, and the row cap (5)
	Alpha     float64 // α: co-occurrence share of the fused weight (0.5)
	Threshold float64 // τ: a neighbour needs w ≥ τ (0.5)
}

// DefaultNeighbourOptions are NexusRAG's (Table 6).
func DefaultNeighbourOptions() NeighbourOptions {
	return NeighbourOptions{CoShare: 0.1, CoCap: 200, SimTopK: 10, Kappa: 5, Alpha: 0.5, Threshold: 0.5}
}

// Validate reports a setting W cannot be built with.
func (o NeighbourOptions) Validate() error {
	switch {
	case !(o.CoShare > 0 && o.CoShare <= 1):
		return fmt.Errorf("graphops: neighbour matrix co-occurrence share %v: want 0 < share ≤ 1", o.CoShare)
	case o.CoCap < 1 || o.SimTopK < 0 || o.Kappa < 1:
		return fmt.Errorf("graphops: neighbour matrix needs co-occurrence cap ≥ 1, cosine top-k ≥ 0, κ ≥ 1; got %d, %d, %d", o.CoCap, o.SimTopK, o.Kappa)
	case !(o.Alpha >= 0 && o.Alpha <= 1):
		return fmt.Errorf("graphops: neighbour matrix α %v: want 0 ≤ α ≤ 1", o.Alpha)
	case !(o.Threshold >= 0 && o.Threshold <= 1):
		return fmt.Errorf("graphops: neighbour matrix τ %v: want 0 ≤ τ ≤ 1", o.Threshold)
	}
	return nil
}

// cand is one neighbour candidate of an entity.
type cand struct {
	j   int32
	v   float64
	w   float64
	co  bool // among the top κ co-occurring entities
	sim bool // among the top κ cosine neighbours
}

// BuildNeighbours computes W from the sentence co-occurrences and the
// entity vectors (vecs: len(Entities)×dims, unit length or zero), setting
// t.W. The cosine neighbours come from exact top-k (the reference uses an
// HNSW index with efSearch 128, which is close to exact at this size); an
// entity whose vector is zero (nothing the embedder knows) has none.
func (t *TriGraph) BuildNeighbours(ctx context.Context, be engine.Backend, vecs []float32, dims int, o NeighbourOptions) error {
	ne := len(t.Entities)
	if err := o.Validate(); err != nil {
		return err
	}
	if len(vecs) != ne*dims {
		return fmt.Errorf("graphops: neighbour matrix: %d vector values for %d entities × %d", len(vecs), ne, dims)
	}
	sims, err := cosineNeighbours(ctx, be, vecs, ne, dims, min(o.SimTopK, ne-1))
	if err != nil {
		return err
	}
	rows := make([][]cand, ne)
	parallelChunks(ne, min(4, max(1, ne/1024)), func(_, lo, hi int) {
		count := make([]int32, ne)
		for i := lo; i < hi; i++ {
			rows[i] = fuseRow(t.cooccurring(i, count, o), sims[i], o)
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	t.W = rowsToCSR(rows)
	return nil
}

// NeighbourBlock is how many entities' rows of W one GEMM scores.
const NeighbourBlock = 128

// NeighbourRows computes the rows of W of the entities in block b
// (b·NeighbourBlock up to NeighbourBlock of them) as BuildNeighbours does,
// by the same GEMM of the same shape, so with the same rounding: for a
// view of the Tri-Graph (WRows), whose rows are asked as a query reaches
// them. vecs are the entity vectors (len(Entities)×dims).
func (t *TriGraph) NeighbourRows(ctx context.Context, be engine.Backend, vecs []float32, dims, b int, o NeighbourOptions) (CSR, error) {
	ne := len(t.Entities)
	lo, hi := b*NeighbourBlock, min((b+1)*NeighbourBlock, ne)
	if err := o.Validate(); err != nil {
		return CSR{}, err
	}
	if len(vecs) != ne*dims || b < 0 || lo >= ne {
		return CSR{}, fmt.Errorf("graphops: neighbour block %d: %d vector values for %d entities × %d", b, len(vecs), ne, dims)
	}
	sims, err := cosineRows(ctx, be, vecs, ne, dims, min(o.SimTopK, ne-1), lo, hi)
	if err != nil {
		return CSR{}, err
	}
	rows := make([][]cand, hi-lo)
	count := make([]int32, ne)
	for i := lo; i < hi; i++ {
		rows[i-lo] = fuseRow(t.cooccurring(i, count, o), sims[i], o)
	}
	return rowsToCSR(rows), nil
}

// cooccurring returns entity i's pruned co-occurrence row, most frequent
// first (ties: lower id): every other entity in a sentence with i, counted
// once per distinct sentence. count is zeroed scratch of len(Entities).
func (t *TriGraph) cooccurring(i int, count []int32, o NeighbourOptions) []cand {
	var touched []int32
	for _, s := range t.EntSents.Neighbors(i) {
		for _, j := range t.SentEnts.Neighbors(int(s)) {
			if int(j) == i {
				continue
			}
			if count[j] == 0 {
				touched = append(touched, j)
			}
			count[j]++
		}
	}
	row := make([]cand, len(touched))
	for k, j := range touched {
		row[k] = cand{j: j, v: float64(count[j])}
		count[j] = 0
	}
	sortCands(row, func(c cand) float64 { return c.v })
	keep := min(max(1, int(o.CoShare*float64(len(row)))), o.CoCap, len(row))
	return row[:keep]
}

// fuseRow merges the top κ of each channel as the reference does: over
// the candidates C (both channels' top κ, by entity number), co =
// count / max count (0 for a candidate from the cosine side only), sim =
// min–max over C of max(cosine, 0), a candidate from the co-occurrence
// side only counting 0 and all-equal values giving ones; w = α·co +
// (1−α)·sim; the candidates with w ≥ τ, at most κ, heaviest first (ties:
// lower entity).
func fuseRow(co, sim []cand, o NeighbourOptions) []cand {
	byJ := map[int32]*cand{}
	get := func(j int32) *cand {
		if p, ok := byJ[j]; ok {
			return p
		}
		p := &cand{j: j}
		byJ[j] = p
		return p
	}
	for _, c := range co[:min(o.Kappa, len(co))] {
		p := get(c.j)
		p.co, p.w = true, c.v // w holds the count until fused
	}
	for _, c := range sim[:min(o.Kappa, len(sim))] {
		p := get(c.j)
		p.sim, p.v = true, max(c.v, 0)
	}
	maxCo, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
	for _, c := range byJ {
		if c.co {
			maxCo = max(maxCo, c.w)
		}
		lo, hi = min(lo, c.v), max(hi, c.v) // v is 0 for co-only candidates
	}
	var out []cand
	for _, c := range byJ {
		coN, simN := 0.0, 1.0 // all-equal similarities normalise to ones
		if c.co && maxCo > 0 {
			coN = c.w / maxCo
		}
		if hi > lo {
			simN = (c.v - lo) / (hi - lo)
		}
		if w := o.Alpha*coN + (1-o.Alpha)*simN; w >= o.Threshold {
			out = append(out, cand{j: c.j, w: w})
		}
	}
	sortCands(out, func(c cand) float64 { return c.w })
	return out[:min(o.Kappa, len(out))]
}

// sortCands sorts by key descending, ties by lower id.
func sortCands(cs []cand, key func(cand) float64) {
	sort.Slice(cs, func(a, b int) bool {
		if ka, kb := key(cs[a]), key(cs[b]); ka != kb {
			return ka > kb
		}
		return cs[a].j < cs[b].j
	})
}

// cosineNeighbours returns each entity's top-k others by inner product of
// the (unit) vectors, best first (ties: lower entity); a zero vector gets
// none. Blocks of queries are scored by one GEMM each (all pairs are
// needed, so BLAS beats the streaming top-k kernel here) and their rows
// cut to the top k+1.
func cosineNeighbours(ctx context.Context, be engine.Backend, vecs []float32, n, dims, k int) ([][]cand, error) {
	return cosineRows(ctx, be, vecs, n, dims, k, 0, n)
}

// cosineRows is rows from..to−1 of cosineNeighbours, computed alike: a
// row asked alone (NeighbourRow) gets the scores, so the neighbours, of
// the whole matrix's build.
func cosineRows(ctx context.Context, be engine.Backend, vecs []float32, n, dims, k, from, to int) ([][]cand, error) {
	out := make([][]cand, n)
	if k < 1 {
		return out, nil
	}
	if be == nil {
		return nil, errNoBackend
	}
	x, err := be.Bind(vecs)
	if err != nil {
		return nil, err
	}
	defer be.Free(x)
	const batch = NeighbourBlock
	scores, err := be.Alloc(engine.F32, min(batch, to-from)*n)
	if err != nil {
		return nil, err
	}
	defer be.Free(scores)
	for lo := from; lo < to; lo += batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := min(lo+batch, to)
		g := engine.GemmOp{TransB: true, M: hi - lo, N: n, K: dims, Alpha: 1, A: x, OffA: lo * dims, B: x, C: scores}
		if err := be.Gemm(g); err != nil {
			return nil, fmt.Errorf("graphops: entity cosine neighbours: %w", err)
		}
		rows, err := engine.TopKRows(ctx, be, scores, hi-lo, n, k+1)
		if err != nil {
			return nil, fmt.Errorf("graphops: entity cosine neighbours: %w", err)
		}
		for i, hits := range rows {
			if isZero(vecs[(lo+i)*dims : (lo+i+1)*dims]) {
				continue
			}
			for _, h := range hits {
				if int(h.Index) != lo+i && len(out[lo+i]) < k {
					out[lo+i] = append(out[lo+i], cand{j: h.Index, v: float64(h.Score)})
				}
			}
		}
	}
	return out, nil
}

func isZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// rowsToCSR packs the fused rows into W.
func rowsToCSR(rows [][]cand) CSR {
	c := CSR{Ptr: make([]int64, len(rows)+1), Idx: []int32{}, W: []float32{}}
	for i, r := range rows {
		for _, x := range r {
			c.Idx = append(c.Idx, x.j)
			c.W = append(c.W, float32(x.w))
		}
		c.Ptr[i+1] = int64(len(c.Idx))
	}
	return c
}
