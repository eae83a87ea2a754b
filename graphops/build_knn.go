package graphops

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/gleaner-rag/gleaner/engine"
)

// KNNOptions configures KET-RAG's chunk graph (docs/methods.md §5.2, §4.2).
type KNNOptions struct {
	Lexical  int // top-k1 neighbours by shared terms (default 1, as KET-RAG); 0: none
	Semantic int // top-k2 neighbours by vector cosine (default 1); 0: none
	// MaxDFRatio ignores terms in more than this share of the documents when
	// counting shared terms (default 0.1): they are shared by almost every
	// pair, cost O(df²), and decide nothing.
	MaxDFRatio float64
	// Nearest, when set, finds a node's semantic neighbours instead of the
	// exact scan: the k rows nearest to row's vector, best first (a search
	// of the index's HNSW graph). It must be safe for concurrent use.
	Nearest func(row int32, k int) ([]engine.Hit, error) `json:"-"`
}

// DefaultKNNOptions are KET-RAG's: one lexical and one semantic neighbour.
func DefaultKNNOptions() KNNOptions { return KNNOptions{Lexical: 1, Semantic: 1, MaxDFRatio: 0.1} }

// TermDocs are postings without frequencies: term t occurs in the documents
// Doc[Ptr[t]:Ptr[t+1]] (ascending), of N documents in all.
type TermDocs struct {
	N   int
	Ptr []int64
	Doc []uint32
}

// errNoBackend refuses a builder's dense work without a backend.
var errNoBackend = errors.New("graphops: the dense work needs an engine backend (engine.Open), got nil")

// KNNEdges builds the undirected kNN chunk graph: for each node its top-k1
// lexical neighbours (the most shared distinct index terms, counted from
// the BM25 postings) and its top-k2 semantic neighbours (exact inner
// product of the normalised vectors, by the batched top-k kernel), without
// the all-pairs matrix KET-RAG's code builds. Ties go to the lower node id.
// Each undirected pair is returned once, as (min, max), with unit weight.
//
// KET-RAG counts lowercased alphabetic tokens of a 2000-term bag; gleaner
// counts its analyzer's stemmed terms, dropping terms above MaxDFRatio.
func KNNEdges(ctx context.Context, be engine.Backend, p TermDocs, vecs []float32, dims int, o KNNOptions) ([]Edge, error) {
	n := p.N
	switch {
	case o.Lexical < 0 || o.Semantic < 0 || (o.Lexical == 0 && o.Semantic == 0):
		return nil, fmt.Errorf("graphops: knn: lexical and semantic neighbours must be ≥ 0 and not both 0, got %d and %d", o.Lexical, o.Semantic)
	case !(o.MaxDFRatio > 0 && o.MaxDFRatio <= 1):
		return nil, fmt.Errorf("graphops: knn: max df ratio must be in (0, 1], got %v (start from DefaultKNNOptions)", o.MaxDFRatio)
	case len(vecs) != n*dims:
		return nil, fmt.Errorf("graphops: knn: %d vector values for %d×%d", len(vecs), n, dims)
	}
	// No node has more than n−1 neighbours; clamping also keeps k+1 below
	// from wrapping when a flag asks for the largest int.
	o.Lexical, o.Semantic = min(o.Lexical, n-1), min(o.Semantic, n-1)
	pairs := map[[2]int32]bool{}
	if o.Lexical > 0 {
		if err := lexicalNeighbours(ctx, p, o, pairs); err != nil {
			return nil, err
		}
	}
	if o.Semantic > 0 && o.Nearest != nil {
		if err := nearestNeighbours(ctx, n, o.Semantic, o.Nearest, pairs); err != nil {
			return nil, err
		}
	} else if o.Semantic > 0 {
		if err := semanticNeighbours(ctx, be, vecs, n, dims, o.Semantic, pairs); err != nil {
			return nil, err
		}
	}
	es := make([]Edge, 0, len(pairs))
	for pr := range pairs {
		es = append(es, Edge{Src: pr[0], Dst: pr[1], W: 1})
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].Src != es[j].Src {
			return es[i].Src < es[j].Src
		}
		return es[i].Dst < es[j].Dst
	})
	return es, nil
}

func addPair(pairs map[[2]int32]bool, a, b int32) {
	if a == b {
		return
	}
	pairs[[2]int32{min(a, b), max(a, b)}] = true
}

// addNearest pairs row with the first k hits that are not row itself.
func addNearest(pairs map[[2]int32]bool, row int32, hits []engine.Hit, k int) {
	kept := 0
	for _, h := range hits {
		if h.Index != row && kept < k {
			addPair(pairs, row, h.Index)
			kept++
		}
	}
}

// lexicalNeighbours counts, for every document, the terms it shares with
// every other document reachable through the postings of its terms.
func lexicalNeighbours(ctx context.Context, p TermDocs, o KNNOptions, pairs map[[2]int32]bool) error {
	n := p.N
	maxDF := int64(o.MaxDFRatio * float64(n))
	fwd := forwardIndex(p, maxDF)
	shared := make([]int32, n)
	var touched []int32
	for d := 0; d < n; d++ {
		if d%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		for _, t := range fwd[d] {
			for _, e := range p.Doc[p.Ptr[t]:p.Ptr[t+1]] {
				if shared[e] == 0 {
					touched = append(touched, int32(e))
				}
				shared[e]++
			}
		}
		top := engine.NewTopK(o.Lexical + 1)
		for _, e := range touched {
			if int(e) != d {
				top.Push(e, float32(shared[e]))
			}
			shared[e] = 0
		}
		touched = touched[:0]
		for i, h := range top.Results() {
			if i < o.Lexical {
				addPair(pairs, int32(d), h.Index)
			}
		}
	}
	return nil
}

// forwardIndex lists each document's terms with df ≤ maxDF.
func forwardIndex(p TermDocs, maxDF int64) [][]int32 {
	fwd := make([][]int32, p.N)
	for t := 0; t+1 < len(p.Ptr); t++ {
		if p.Ptr[t+1]-p.Ptr[t] > max(maxDF, 1) {
			continue
		}
		for _, d := range p.Doc[p.Ptr[t]:p.Ptr[t+1]] {
			fwd[d] = append(fwd[d], int32(t))
		}
	}
	return fwd
}

// semanticNeighbours queries the matrix with its own rows in batches of
// 64, on the backend.
func semanticNeighbours(ctx context.Context, be engine.Backend, vecs []float32, n, dims, k int, pairs map[[2]int32]bool) error {
	if be == nil {
		return errNoBackend
	}
	x, err := be.Bind(vecs)
	if err != nil {
		return err
	}
	defer be.Free(x)
	const batch = 64
	for lo := 0; lo < n; lo += batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi := min(lo+batch, n)
		res, err := engine.SearchFlat(ctx, be, x, n, dims, vecs[lo*dims:hi*dims], hi-lo, k+1)
		if err != nil {
			return err
		}
		for i, hits := range res {
			addNearest(pairs, int32(lo+i), hits, k)
		}
	}
	return nil
}

// nearestNeighbours asks nearest for every node's k+1 nearest rows (the
// node itself is usually the first) on every CPU, and keeps k others.
func nearestNeighbours(ctx context.Context, n, k int, nearest func(int32, int) ([]engine.Hit, error), pairs map[[2]int32]bool) error {
	const chunk = 1024
	res := make([][]engine.Hit, chunk)
	for lo := 0; lo < n; lo += chunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi := min(lo+chunk, n)
		if err := eachRow(lo, hi, func(row int) (err error) {
			res[row-lo], err = nearest(int32(row), k+1)
			return err
		}); err != nil {
			return err
		}
		for i, hits := range res[:hi-lo] {
			addNearest(pairs, int32(lo+i), hits, k)
		}
	}
	return nil
}

// eachRow runs fn for rows [lo, hi) on every CPU and returns the first
// error.
func eachRow(lo, hi int, fn func(row int) error) error {
	var next atomic.Int64
	next.Store(int64(lo))
	workers := min(runtime.GOMAXPROCS(0), hi-lo)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for row := int(next.Add(1) - 1); row < hi && errs[w] == nil; row = int(next.Add(1) - 1) {
				errs[w] = fn(row)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
