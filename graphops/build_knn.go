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
	"github.com/gleaner-rag/gleaner/internal/progress"
)

// KNNOptions configures KET-RAG's chunk graph (docs/methods.md §5.2, §4.2).
type KNNOptions struct {
	Lexical  int // top-k1 neighbours by shared terms (default 1, as KET-RAG); 0: none
	Semantic int // top-k2 neighbours by vector cosine (default 1); 0: none
	// MaxDFRatio ignores terms in more than this share of the documents when
	// counting shared terms (default 0.1): they are shared by almost every
	// pair, cost O(df²), and decide nothing.
	MaxDFRatio float64
	// LexicalBudget bounds the postings read in full for one node's
	// lexical neighbours (default 1<<16; 0: no bound). Its terms are read
	// rarest first; past the budget (once k candidates are met), only the
	// shortlist of candidates met so far is counted on the remaining
	// (frequent) terms, by a merge with their postings. Within the
	// budget, or when the terms read already decide the top k, the
	// neighbours are exact; past it, a neighbour met only through frequent
	// terms is missed. Without a bound the search is exact and, at worst,
	// quadratic in the postings (Σ df²).
	LexicalBudget int64
	// Nearest, when set, finds a node's semantic neighbours instead of the
	// exact scan: the k rows nearest to row's vector, best first (a search
	// of the index's HNSW graph). It must be safe for concurrent use.
	Nearest func(row int32, k int) ([]engine.Hit, error) `json:"-"`
	// Progress shows the build's stages (lexical, then semantic
	// neighbours); nil: none.
	Progress progress.Reporter `json:"-"`
}

// RecordedBudget is the lexical budget of recorded settings decoded over a
// budget of −1: settings recorded before the budget existed (still −1)
// were built with none (0), and a refresh builds them as they were. Any
// other value is kept, so a corrupt negative one is refused by KNNEdges.
func RecordedBudget(b int64) int64 {
	if b == -1 {
		return 0
	}
	return b
}

// LexicalBudgetUsage describes KNNOptions.LexicalBudget as a setting.
const LexicalBudgetUsage = "lexical neighbours: postings read in full per node, rarest terms first; past them only the best candidates met are counted (0: no bound: exact, quadratic in the postings at worst)"

// DefaultKNNOptions are KET-RAG's: one lexical and one semantic neighbour.
func DefaultKNNOptions() KNNOptions {
	return KNNOptions{Lexical: 1, Semantic: 1, MaxDFRatio: 0.1, LexicalBudget: 1 << 16}
}

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
	case o.LexicalBudget < 0:
		return nil, fmt.Errorf("graphops: knn: the lexical budget must be ≥ 0 (0: no bound), got %d", o.LexicalBudget)
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
		if err := nearestNeighbours(ctx, n, o.Semantic, o.Nearest, reporter(o.Progress), pairs); err != nil {
			return nil, err
		}
	} else if o.Semantic > 0 {
		if err := semanticNeighbours(ctx, be, vecs, n, dims, o.Semantic, reporter(o.Progress), pairs); err != nil {
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

// semanticNeighbours queries the matrix with its own rows in batches of
// 64, on the backend.
func semanticNeighbours(ctx context.Context, be engine.Backend, vecs []float32, n, dims, k int, rep progress.Reporter, pairs map[[2]int32]bool) error {
	if be == nil {
		return errNoBackend
	}
	x, err := be.Bind(vecs)
	if err != nil {
		return err
	}
	defer be.Free(x)
	const batch = 64
	rep.Stage("knn: semantic neighbours (exact)", n)
	defer rep.Finish()
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
		rep.Set(hi)
	}
	return nil
}

// nearestNeighbours asks nearest for every node's k+1 nearest rows (the
// node itself is usually the first) on every CPU, and keeps k others.
func nearestNeighbours(ctx context.Context, n, k int, nearest func(int32, int) ([]engine.Hit, error), rep progress.Reporter, pairs map[[2]int32]bool) error {
	const chunk = 1024
	res := make([][]engine.Hit, chunk)
	rep.Stage("knn: semantic neighbours (HNSW graph)", n)
	defer rep.Finish()
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
		rep.Set(hi)
	}
	return nil
}

// reporter is r, or one that discards progress.
func reporter(r progress.Reporter) progress.Reporter {
	if r == nil {
		return progress.Nop{}
	}
	return r
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
