package ivf

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops/hnsw"
)

// assignChunk is how many rows one Nearest call assigns: progress and
// cancellation between calls, and a bounded buffer for a backend's search.
const assignChunk = 8192

// splitEps moves an empty list's new centroid off the one it was copied
// from (FAISS's EPS for split clusters).
const splitEps = 1.0 / 1024

// Build trains the centroids on a sample of the n rows of X (row-major, d
// values each) and files every row under its nearest centroid. progress,
// when not nil, is called with the k-means iterations done (of
// o.Iterations), then with o.Iterations+1 once every row is filed.
// Cancellation is checked between Nearest calls.
func Build(ctx context.Context, X []float32, n, d int, o Options, progress func(done int)) (*Index, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	switch {
	case n < 0 || d <= 0 || len(X) != n*d:
		return nil, fmt.Errorf("ivf: %d values for %d rows of %d", len(X), n, d)
	case n > math.MaxInt32:
		return nil, fmt.Errorf("ivf: %d rows, at most %d", n, math.MaxInt32)
	}
	if o.Nearest == nil {
		o.Nearest = GoNearest
	}
	lists := min(o.Lists, n)
	if n == 0 {
		ix := &Index{Dims: d, Offsets: []int64{0}}
		if o.Codes {
			ix.Codes, ix.Scales = []int8{}, []float32{}
		}
		return ix, nil
	}
	S, m := sample(X, n, d, lists*o.Sample, o.Seed)
	C := make([]float32, lists*d)
	copy(C, S[:lists*d]) // the sample is shuffled: its first rows are a random choice
	normalize(C, d)
	assign := make([]int32, m)
	for it := range o.Iterations {
		if err := nearestAll(ctx, o.Nearest, C, lists, d, S, m, assign); err != nil {
			return nil, err
		}
		recenter(C, lists, d, S, assign)
		if progress != nil {
			progress(it + 1)
		}
	}
	all := make([]int32, n)
	if err := nearestAll(ctx, o.Nearest, C, lists, d, X, n, all); err != nil {
		return nil, err
	}
	ix := &Index{N: n, Dims: d, Lists: lists, Centroids: C}
	ix.Offsets, ix.IDs = file(all, lists)
	if o.Codes {
		var err error
		if ix.Codes, ix.Scales, err = codes(X, d, ix.IDs); err != nil {
			return nil, err
		}
	}
	ix.prepare()
	if progress != nil {
		progress(o.Iterations + 1)
	}
	return ix, nil
}

// sample copies min(n, want) distinct rows, in an order drawn from seed,
// into a new matrix.
func sample(X []float32, n, d, want int, seed uint64) ([]float32, int) {
	m := min(n, want)
	r := rand.New(rand.NewPCG(seed, 0x1f83d9abfb41bd6b))
	pick := make([]int32, n)
	for i := range pick {
		pick[i] = int32(i)
	}
	for i := range m { // a partial Fisher–Yates shuffle
		j := i + r.IntN(n-i)
		pick[i], pick[j] = pick[j], pick[i]
	}
	S := make([]float32, m*d)
	for i, v := range pick[:m] {
		copy(S[i*d:(i+1)*d], X[int(v)*d:int(v+1)*d])
	}
	return S, m
}

// nearestAll assigns the n rows of X in chunks, checking ctx between them.
func nearestAll(ctx context.Context, near Nearest, C []float32, nc, d int, X []float32, n int, out []int32) error {
	for lo := 0; lo < n; lo += assignChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi := min(n, lo+assignChunk)
		if err := near(ctx, C, nc, d, X[lo*d:hi*d], hi-lo, out[lo:hi]); err != nil {
			return err
		}
		for i, c := range out[lo:hi] {
			if c < 0 || int(c) >= nc {
				return fmt.Errorf("ivf: nearest centroid of row %d is %d, of %d", lo+i, c, nc)
			}
		}
	}
	return nil
}

// recenter moves every centroid to the mean direction of its rows
// (spherical k-means: inner product ranks by direction), summing in
// float64 in row order; an empty list takes half of the largest one.
func recenter(C []float32, nc, d int, S []float32, assign []int32) {
	sum := make([]float64, nc*d)
	count := make([]int, nc)
	for i, c := range assign {
		count[c]++
		acc := sum[int(c)*d : int(c+1)*d]
		for j, x := range S[i*d : (i+1)*d] {
			acc[j] += float64(x)
		}
	}
	for c := range nc {
		if count[c] == 0 {
			continue
		}
		for j := range d {
			C[c*d+j] = float32(sum[c*d+j] / float64(count[c]))
		}
	}
	splitEmpty(C, nc, d, count)
	normalize(C, d)
}

// splitEmpty gives each empty list a copy of the largest list's centroid,
// the two pushed apart by splitEps in opposite directions per dimension,
// and half of its count (FAISS's split_clusters, the largest list taken
// rather than one drawn by size, so that no draw is needed).
func splitEmpty(C []float32, nc, d int, count []int) {
	for c := range nc {
		if count[c] != 0 {
			continue
		}
		big := 0
		for j := range nc {
			if count[j] > count[big] {
				big = j
			}
		}
		if count[big] < 2 {
			continue // nothing to split: fewer distinct rows than lists
		}
		for j := range d {
			x := C[big*d+j]
			if j%2 == 0 {
				C[c*d+j], C[big*d+j] = x*(1+splitEps), x*(1-splitEps)
			} else {
				C[c*d+j], C[big*d+j] = x*(1-splitEps), x*(1+splitEps)
			}
		}
		count[c] = count[big] / 2
		count[big] -= count[c]
	}
}

// normalize scales every row of C to unit length; a zero row stays.
func normalize(C []float32, d int) {
	for i := 0; i < len(C); i += d {
		row := C[i : i+d]
		var s float64
		for _, x := range row {
			s += float64(x) * float64(x)
		}
		if s == 0 {
			continue
		}
		inv := 1 / math.Sqrt(s)
		for j, x := range row {
			row[j] = float32(float64(x) * inv)
		}
	}
}

// file groups the rows by list: offsets[l]..offsets[l+1] of ids are list
// l's rows, ascending.
func file(assign []int32, lists int) ([]int64, []int32) {
	off := make([]int64, lists+1)
	for _, c := range assign {
		off[c+1]++
	}
	for l := range lists {
		off[l+1] += off[l]
	}
	ids := make([]int32, len(assign))
	next := append([]int64(nil), off[:lists]...)
	for v, c := range assign {
		ids[next[c]] = int32(v)
		next[c]++
	}
	return off, ids
}

// codes quantizes the rows of X to int8 (engine.Quantize) in the order of
// ids.
func codes(X []float32, d int, ids []int32) ([]int8, []float32, error) {
	m, err := engine.Quantize(X, len(ids), d, engine.QuantInt8)
	if err != nil {
		return nil, nil, fmt.Errorf("ivf: codes: %w", err)
	}
	c, s := make([]int8, len(m.I8)), make([]float32, len(ids))
	for i, v := range ids {
		copy(c[i*d:(i+1)*d], m.I8[int(v)*d:int(v+1)*d])
		s[i] = m.Scale[v]
	}
	return c, s, nil
}

// GoNearest is the portable Nearest: each row against every centroid with
// hnsw.GoDot's arithmetic, the lower index on a tie.
func GoNearest(_ context.Context, C []float32, nc, d int, X []float32, nx int, out []int32) error {
	ids := identity(nc)
	sc := make([]float32, nc)
	for i := range nx {
		hnsw.GoDot(C, d, ids, X[i*d:(i+1)*d], sc)
		best := 0
		for c, s := range sc {
			if s > sc[best] {
				best = c
			}
		}
		out[i] = int32(best)
	}
	return nil
}

func identity(n int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	return ids
}
