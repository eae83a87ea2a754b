package graphops

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/internal/parallel"
)

// countEveryPair is the all-pairs count LexicalNeighbours replaces: every
// document's shared-term count with every document its terms reach, the
// top k by count, ties to the lower id.
func countEveryPair(p TermDocs, k int, maxDF int64) [][]int32 {
	fwd := forwardByRarity(p, maxDF)
	shared := make([]int32, p.N)
	out := make([][]int32, p.N)
	for d := range p.N {
		var touched []int32
		for _, t := range fwd.terms(d) {
			for _, e := range p.Doc[p.Ptr[t]:p.Ptr[t+1]] {
				if int(e) == d {
					continue
				}
				if shared[e] == 0 {
					touched = append(touched, int32(e))
				}
				shared[e]++
			}
		}
		top := engine.NewTopK(k)
		for _, e := range touched {
			top.Push(e, float32(shared[e]))
			shared[e] = 0
		}
		for _, h := range top.Results() {
			out[d] = append(out[d], h.Index)
		}
		slices.Sort(out[d])
	}
	return out
}

// zipfDocs makes n documents of Zipf-distributed terms over vocab, with
// empty documents and exact duplicates (ties) among them, as postings.
func zipfDocs(seed uint64, n, vocab int) TermDocs {
	r := rand.New(rand.NewPCG(seed, 1))
	z := rand.NewZipf(r, 1.1, 2, uint64(vocab-1))
	docs := make([][]int, n)
	for d := range docs {
		switch {
		case d%97 == 5:
			continue // no terms
		case d%13 == 7:
			docs[d] = docs[r.IntN(d)] // a duplicate of an earlier one
			continue
		}
		seen := map[int]bool{}
		for range 5 + r.IntN(60) {
			seen[int(z.Uint64())] = true
		}
		for t := range seen {
			docs[d] = append(docs[d], t)
		}
	}
	post := make([][]uint32, vocab)
	for d, ts := range docs {
		for _, t := range ts {
			post[t] = append(post[t], uint32(d))
		}
	}
	p := TermDocs{N: n, Ptr: make([]int64, vocab+1)}
	for t, ds := range post {
		p.Doc = append(p.Doc, ds...)
		p.Ptr[t+1] = int64(len(p.Doc))
	}
	return p
}

// TestLexicalTopKCountsEveryPair checks the pruned search against the
// all-pairs count on Zipfian corpora, for several k and df caps and for
// one worker and many: the same neighbour sets, document by document.
func TestLexicalTopKCountsEveryPair(t *testing.T) {
	for _, tc := range []struct {
		seed     uint64
		n, vocab int
		k        int
		ratio    float64
	}{
		{1, 3000, 4000, 1, 0.1}, {2, 3000, 4000, 2, 0.1}, {3, 2000, 1500, 5, 0.05},
		{4, 2000, 800, 3, 1}, {5, 500, 300, 40, 0.5}, {6, 300, 5000, 299, 1},
	} {
		p := zipfDocs(tc.seed, tc.n, tc.vocab)
		want := countEveryPair(p, tc.k, int64(tc.ratio*float64(tc.n)))
		for _, workers := range []int{1, 3} {
			ctx := parallel.WithWorkers(context.Background(), workers)
			got, err := LexicalNeighbours(ctx, p, KNNOptions{Lexical: tc.k, MaxDFRatio: tc.ratio})
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for d := range want {
				g := slices.Sorted(slices.Values(got[d]))
				if !slices.Equal(g, want[d]) {
					if bad++; bad <= 3 {
						t.Errorf("seed %d k %d workers %d: document %d: neighbours %v, counting every pair %v", tc.seed, tc.k, workers, d, g, want[d])
					}
				}
			}
		}
	}
}

func TestGallop(t *testing.T) {
	a := []uint32{2, 3, 5, 8, 13, 21, 34, 55, 89}
	for lo := 0; lo <= len(a); lo++ {
		for x := uint32(0); x < 100; x++ {
			want := lo
			for want < len(a) && a[want] < x {
				want++
			}
			if got := gallop(a, lo, x); got != want {
				t.Errorf("gallop(lo %d, x %d) = %d, want %d", lo, x, got, want)
			}
		}
	}
}

// TestLexicalBudget checks the bounded search: a node whose postings fit
// the budget gets its exact neighbours, every other gets k distinct nodes
// that share a term with it, a budget above every node's postings changes
// nothing, and a negative budget is refused.
func TestLexicalBudget(t *testing.T) {
	p := zipfDocs(7, 3000, 2500)
	const ratio = 0.2
	maxDF := int64(ratio * float64(p.N))
	fwd := forwardByRarity(p, maxDF)
	for _, k := range []int{1, 3} {
		want := countEveryPair(p, k, maxDF)
		for _, budget := range []int64{1, 500, 4000, 1 << 40} {
			got, err := LexicalNeighbours(context.Background(), p, KNNOptions{Lexical: k, MaxDFRatio: ratio, LexicalBudget: budget})
			if err != nil {
				t.Fatal(err)
			}
			cut, differ := 0, 0
			for d := range p.N {
				var read int64
				for _, t := range fwd.terms(d) {
					read += p.Ptr[t+1] - p.Ptr[t]
				}
				g := slices.Sorted(slices.Values(got[d]))
				if read <= budget {
					if !slices.Equal(g, want[d]) {
						t.Errorf("k %d budget %d: document %d reads %d postings: %v, exact %v", k, budget, d, read, g, want[d])
					}
					continue
				}
				cut++
				if !slices.Equal(g, want[d]) {
					differ++
				}
				if len(g) != len(want[d]) || slices.Contains(g, int32(d)) || len(slices.Compact(slices.Clone(g))) != len(g) {
					t.Errorf("k %d budget %d: document %d: %v, want %d distinct others", k, budget, d, g, len(want[d]))
				}
				for _, e := range g {
					if sharedTerms(fwd, d, int(e)) == 0 {
						t.Errorf("k %d budget %d: document %d: neighbour %d shares no term", k, budget, d, e)
					}
				}
			}
			if budget == 1<<40 && cut > 0 {
				t.Errorf("budget %d cut %d documents", budget, cut)
			}
			if budget == 500 && cut == 0 {
				t.Errorf("budget 500 cut no document: the test does not reach the bounded path")
			}
			t.Logf("k %d budget %d: %d documents over the budget, %d of them with other neighbours than the exact ones", k, budget, cut, differ)
		}
	}
	if _, err := KNNEdges(context.Background(), nil, p, nil, 0, KNNOptions{Lexical: 1, MaxDFRatio: 0.1, LexicalBudget: -1}); err == nil {
		t.Error("a negative budget was accepted")
	}
}

func sharedTerms(fwd termLists, a, b int) int {
	c := 0
	for _, t := range fwd.terms(a) {
		if slices.Contains(fwd.terms(b), t) {
			c++
		}
	}
	return c
}
