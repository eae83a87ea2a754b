package graphops

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/internal/parallel"
)

// countEveryPair is the all-pairs count LexicalNeighbours replaces: every
// document's shared-term count with every other, over the terms in at
// most maxDF (at least 1) documents, the top k by count, ties to the
// lower id. It reads the postings on its own (no forward lists).
func countEveryPair(p TermDocs, k int, maxDF int64) [][]int32 {
	terms := make([][]int, p.N)
	for t := 0; t+1 < len(p.Ptr); t++ {
		if p.Ptr[t+1]-p.Ptr[t] <= max(maxDF, 1) {
			for _, d := range p.Doc[p.Ptr[t]:p.Ptr[t+1]] {
				terms[d] = append(terms[d], t)
			}
		}
	}
	shared := make([]int32, p.N)
	out := make([][]int32, p.N)
	for d := range p.N {
		var touched []int32
		for _, t := range terms[d] {
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
		{8, 1000, 600, 2, 0}, // ratio 0: the cap is set to a term's df exactly
	} {
		p := zipfDocs(tc.seed, tc.n, tc.vocab)
		if tc.ratio == 0 {
			tc.ratio = float64(p.Ptr[11]-p.Ptr[10]) / float64(tc.n) // term 10's df: kept, terms one above it are not
		}
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
	fwd, err := forwardByRarity(p, maxDF)
	if err != nil {
		t.Fatal(err)
	}
	// Budgets equal to some nodes' whole reads: those nodes must still be
	// exact (the budget is how much may be read, not a strict bound).
	budgets := []int64{1, 500, 4000, 1 << 40}
	for _, d := range []int{100, 1000, 2000} {
		var read int64
		for _, t := range fwd.terms(d) {
			read += p.Ptr[t+1] - p.Ptr[t]
		}
		budgets = append(budgets, read)
	}
	for _, k := range []int{1, 3} {
		want := countEveryPair(p, k, maxDF)
		for _, budget := range budgets {
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

// TestLexicalBudgetShortlist: past the budget, a candidate met early that
// ranks below the top k on the terms read must still be counted on the
// rest. Node 1 meets 2 and 3 through its rare term; 3 shares its three
// frequent terms too but ties 2 on the rare term and loses on id, so a
// shortlist of k would answer 2.
func TestLexicalBudgetShortlist(t *testing.T) {
	var post [][]uint32
	post = append(post, []uint32{1, 2, 3}) // the rare term
	for range 3 {
		f := []uint32{1, 3}
		for d := uint32(4); d < 40; d++ {
			f = append(f, d)
		}
		post = append(post, f)
	}
	p := TermDocs{N: 40, Ptr: []int64{0}}
	for _, l := range post {
		p.Doc = append(p.Doc, l...)
		p.Ptr = append(p.Ptr, int64(len(p.Doc)))
	}
	for _, budget := range []int64{0, 3, 4, 1 << 20} {
		got, err := LexicalNeighbours(context.Background(), p, KNNOptions{Lexical: 1, MaxDFRatio: 1, LexicalBudget: budget})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[1], []int32{3}) {
			t.Errorf("budget %d: node 1's neighbour %v, want [3] (4 shared terms against 1)", budget, got[1])
		}
	}
}

// TestLexicalPrunes: the exact search reads well under the postings the
// all-pairs count reads on a Zipfian corpus, and its stopping rule is
// what saves them (a regression to the full count would pass the
// equality tests).
func TestLexicalPrunes(t *testing.T) {
	p := zipfDocs(9, 3000, 4000)
	fwd, err := forwardByRarity(p, int64(0.1*float64(p.N)))
	if err != nil {
		t.Fatal(err)
	}
	s := &lexScratch{count: make([]int32, p.N), top: engine.NewTopK(1)}
	var all int64
	for d := range p.N {
		for _, t := range fwd.terms(d) {
			all += p.Ptr[t+1] - p.Ptr[t]
		}
		s.neighbours(p, fwd.terms(d), int32(d), 1, 0)
	}
	if s.read > all*3/4 {
		t.Errorf("read %d of %d postings in full: the stopping rule saved little", s.read, all)
	}
	t.Logf("read %d of %d postings in full (%.0f %%)", s.read, all, 100*float64(s.read)/float64(all))
}

// TestLexicalEdges: tiny and degenerate inputs, a cancelled context, and
// postings that are not strictly ascending.
func TestLexicalEdges(t *testing.T) {
	ctx := context.Background()
	o := KNNOptions{Lexical: 5, MaxDFRatio: 1}
	for _, p := range []TermDocs{
		{N: 0, Ptr: []int64{0}},
		{N: 1, Ptr: []int64{0, 1}, Doc: []uint32{0}},
		{N: 3, Ptr: []int64{0, 0, 2}, Doc: []uint32{0, 2}},
	} {
		got, err := LexicalNeighbours(ctx, p, o)
		if err != nil || len(got) != p.N {
			t.Fatalf("%d nodes: %v, %v", p.N, got, err)
		}
		if p.N == 3 && (!slices.Equal(got[0], []int32{2}) || len(got[1]) != 0 || !slices.Equal(got[2], []int32{0})) {
			t.Errorf("3 nodes: %v, want [[2] [] [0]]", got)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := LexicalNeighbours(cancelled, zipfDocs(1, 3000, 4000), o); err == nil {
		t.Error("a cancelled context gave no error")
	}
	for _, bad := range []TermDocs{
		{N: 5, Ptr: []int64{0, 4}, Doc: []uint32{0, 1, 1, 1}},
		{N: 5, Ptr: []int64{0, 3}, Doc: []uint32{0, 3, 2}},
		{N: 5, Ptr: []int64{0, 2}, Doc: []uint32{0, 5}},
	} {
		if _, err := LexicalNeighbours(ctx, bad, o); err == nil || !strings.Contains(err.Error(), "strictly ascending") {
			t.Errorf("postings %v: %v, want an error", bad.Doc, err)
		}
	}
	for _, o := range []KNNOptions{{Lexical: 0, MaxDFRatio: 1}, {Lexical: 1}, {Lexical: 1, MaxDFRatio: 1, LexicalBudget: -1}} {
		if _, err := LexicalNeighbours(ctx, TermDocs{N: 0, Ptr: []int64{0}}, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}

// TestLexicalBudgetIsInclusive: a node that reads exactly its budget reads
// all of it. Node 5's best neighbour (0, by id among ties) is met only
// through its last, most frequent term.
func TestLexicalBudgetIsInclusive(t *testing.T) {
	p := TermDocs{N: 12, Ptr: []int64{0, 2, 10}, Doc: []uint32{2, 5, 0, 5, 6, 7, 8, 9, 10, 11}}
	got, err := LexicalNeighbours(context.Background(), p, KNNOptions{Lexical: 1, MaxDFRatio: 1, LexicalBudget: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[5], []int32{0}) {
		t.Errorf("node 5 with a budget of exactly its 10 postings: %v, want [0]", got[5])
	}
}

// TestRecordedBudget: settings recorded before the budget existed decode
// to the −1 sentinel and build exact; a corrupt negative budget stays
// negative and is refused.
func TestRecordedBudget(t *testing.T) {
	if b := RecordedBudget(-1); b != 0 {
		t.Errorf("sentinel: %d, want 0", b)
	}
	if b := RecordedBudget(65536); b != 65536 {
		t.Errorf("recorded 65536: %d", b)
	}
	o := KNNOptions{Lexical: 1, MaxDFRatio: 0.1, LexicalBudget: RecordedBudget(-7)}
	if _, err := KNNEdges(context.Background(), nil, zipfDocs(1, 50, 40), nil, 0, o); err == nil {
		t.Error("a recorded budget of -7 was accepted")
	}
}
