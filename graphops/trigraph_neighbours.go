package graphops

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops/hnsw"
	"github.com/gleaner-rag/gleaner/internal/progress"
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
	// ANNFrom is the entity count from which the cosine neighbours come
	// from an HNSW graph over the entity vectors, as the reference's do
	// (M 16, efConstruction 100), instead of an exact all-pairs GEMM
	// (0: always exact). Ef is that search's candidates (the
	// reference's efSearch 128).
	ANNFrom int
	Ef      int
	// Progress shows the build's stages (exact: the rows scored; on the
	// HNSW graph: the vectors inserted, then searched); nil: none.
	Progress progress.Reporter `json:"-"`
}

// DefaultNeighbourOptions are NexusRAG's (Table 6).
func DefaultNeighbourOptions() NeighbourOptions {
	return NeighbourOptions{CoShare: 0.1, CoCap: 200, SimTopK: 10, Kappa: 5, Alpha: 0.5, Threshold: 0.5, ANNFrom: 100_000, Ef: 128}
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
	case o.ANNFrom < 0 || o.ANNFrom > 0 && (o.Ef < 1 || o.Ef > hnsw.MaxEf):
		return fmt.Errorf("graphops: neighbour matrix needs an HNSW threshold ≥ 0 (0: exact) and, with one, ef in [1, %d]; got %d, %d", hnsw.MaxEf, o.ANNFrom, o.Ef)
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
// t.W. The cosine neighbours come from exact top-k, or from an HNSW graph
// from o.ANNFrom entities (the reference uses an HNSW index with efSearch
// 128); an entity whose vector is zero (nothing the embedder knows) has
// none.
func (t *TriGraph) BuildNeighbours(ctx context.Context, be engine.Backend, vecs []float32, dims int, o NeighbourOptions) error {
	ne := len(t.Entities)
	if err := o.Validate(); err != nil {
		return err
	}
	if len(vecs) != ne*dims {
		return fmt.Errorf("graphops: neighbour matrix: %d vector values for %d entities × %d", len(vecs), ne, dims)
	}
	var sims [][]cand
	var err error
	p := reporter(o.Progress)
	if o.ANNFrom > 0 && ne >= o.ANNFrom {
		sims, err = annNeighbours(ctx, be, vecs, ne, dims, min(o.SimTopK, ne-1), o.Ef, p)
	} else {
		p.Stage("neighbour matrix", ne)
		sims, err = cosineRows(ctx, be, vecs, ne, dims, min(o.SimTopK, ne-1), 0, ne, p)
	}
	p.Finish()
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
// (b·NeighbourBlock up to NeighbourBlock of them) as an exact
// BuildNeighbours does, by the same GEMM of the same shape, so with the
// same rounding: for a view of the Tri-Graph (WRows), whose rows are asked
// as a query reaches them. The rows are exact whatever o.ANNFrom says (a
// block is one GEMM). vecs are the entity vectors (len(Entities)×dims).
func (t *TriGraph) NeighbourRows(ctx context.Context, be engine.Backend, vecs []float32, dims, b int, o NeighbourOptions) (CSR, error) {
	ne := len(t.Entities)
	lo, hi := b*NeighbourBlock, min((b+1)*NeighbourBlock, ne)
	if err := o.Validate(); err != nil {
		return CSR{}, err
	}
	if len(vecs) != ne*dims || b < 0 || lo >= ne {
		return CSR{}, fmt.Errorf("graphops: neighbour block %d: %d vector values for %d entities × %d", b, len(vecs), ne, dims)
	}
	sims, err := cosineRows(ctx, be, vecs, ne, dims, min(o.SimTopK, ne-1), lo, hi, progress.Nop{})
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

// cosineRows returns rows from..to−1 of each entity's top-k others by
// inner product of the (unit) vectors, best first (ties: lower entity); a
// zero vector gets none. Blocks of queries are scored by one GEMM each
// (all pairs are needed, so BLAS beats the streaming top-k kernel here)
// and their rows cut to the top k+1; a row asked alone (NeighbourRows)
// gets the scores, so the neighbours, of the whole matrix's build. p is
// told the rows done.
func cosineRows(ctx context.Context, be engine.Backend, vecs []float32, n, dims, k, from, to int, p progress.Reporter) ([][]cand, error) {
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
		p.Set(hi - from)
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

// annNeighbours is cosineRows over every row, from an HNSW graph over the
// distinct nonzero vectors, scored by the backend's dot (as its exact search): an
// entity's top k among the entities holding its vector or one of the
// nearest others found with ef candidates, ranked as the exact search
// ranks (score, then the lower entity). Identical vectors are one graph
// node: LSA gives many entities the same vector, and a graph of copies
// walks badly.
func annNeighbours(ctx context.Context, be engine.Backend, vecs []float32, n, dims, k, ef int, p progress.Reporter) ([][]cand, error) {
	out := make([][]cand, n)
	if k < 1 {
		return out, nil
	}
	u := distinctRows(vecs, n, dims)
	o := hnsw.DefaultOptions()
	if o.Dot = engine.DotRowsOf(be); o.Dot == nil {
		o.Dot = hnsw.GoDot // also scores each row against itself below
	}
	dot := o.Dot
	p.Stage("neighbour matrix: hnsw graph", len(u.members))
	g, err := hnsw.Build(ctx, u.rows, len(u.members), dims, o, p.Set)
	if err != nil {
		return nil, fmt.Errorf("graphops: entity cosine neighbours: %w", err)
	}
	p.Finish()
	p.Stage("neighbour matrix: search", len(u.members))
	var failed error
	var mu sync.Mutex
	var done atomic.Int64
	parallelChunks(len(u.members), min(o.Workers, max(1, len(u.members)/1024)), func(_, lo, hi int) {
		self := make([]float32, 1)
		for r := lo; r < hi && ctx.Err() == nil; r++ {
			if r%1024 == 0 { // the last block counts in full: cap at the total
				p.Set(int(min(done.Add(1024), int64(len(u.members)))))
			}
			q := u.rows[r*dims : (r+1)*dims]
			hits, err := g.Search(u.rows, q, k+1, ef, dot)
			if err != nil {
				mu.Lock()
				failed = err
				mu.Unlock()
				return
			}
			dot(u.rows, dims, []int32{int32(r)}, q, self)
			for _, e := range u.members[r] {
				out[e] = u.expand(e, r, self[0], hits, k)
			}
		}
	})
	if failed != nil {
		return nil, fmt.Errorf("graphops: entity cosine neighbours: %w", failed)
	}
	return out, ctx.Err()
}

// distinct is the distinct nonzero rows of a matrix, each with the rows
// (entities) holding it, ascending.
type distinct struct {
	rows    []float32
	members [][]int32
}

// distinctRows groups the nonzero rows of vecs by value.
func distinctRows(vecs []float32, n, dims int) distinct {
	var u distinct
	byHash := map[uint64][]int32{} // hash → distinct rows
	for i := range n {
		v := vecs[i*dims : (i+1)*dims]
		if isZero(v) {
			continue
		}
		h := hashRow(v)
		found := -1
		for _, r := range byHash[h] {
			if slices.Equal(u.rows[int(r)*dims:(int(r)+1)*dims], v) {
				found = int(r)
				break
			}
		}
		if found < 0 {
			found = len(u.members)
			byHash[h] = append(byHash[h], int32(found))
			u.rows, u.members = append(u.rows, v...), append(u.members, nil)
		}
		u.members[found] = append(u.members[found], int32(i))
	}
	return u
}

// hashRow is FNV-1a over a row's bits.
func hashRow(v []float32) uint64 {
	h := uint64(14695981039346656037)
	for _, x := range v {
		h = (h ^ uint64(math.Float32bits(x))) * 1099511628211
	}
	return h
}

// expand lists entity e's top k others as the exact search ranks them
// (score, then the lower entity): the first k+1 members of its own row
// (score self) and of each hit's.
func (u distinct) expand(e int32, r int, self float32, hits []engine.Hit, k int) []cand {
	var row []cand
	add := func(r int, score float32) {
		for _, j := range u.members[r][:min(k+1, len(u.members[r]))] {
			if j != e {
				row = append(row, cand{j: j, v: float64(score)})
			}
		}
	}
	add(r, self)
	for _, h := range hits {
		if int(h.Index) != r {
			add(int(h.Index), h.Score)
		}
	}
	sortCands(row, func(c cand) float64 { return c.v })
	return row[:min(k, len(row))]
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
