package lexical

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// zipfTexts are n documents over a Zipfian vocabulary, with every fifth one
// a copy of an earlier one so that scores tie.
func zipfTexts(rng *rand.Rand, n, vocab int) []string {
	z := rand.NewZipf(rng, 1.1, 1, uint64(vocab-1))
	texts := make([]string, n)
	for d := range texts {
		if d > 0 && d%5 == 0 {
			texts[d] = texts[rng.IntN(d)]
			continue
		}
		w := make([]string, 3+rng.IntN(60))
		for i := range w {
			w[i] = fmt.Sprintf("w%d", z.Uint64())
		}
		texts[d] = strings.Join(w, " ")
	}
	return texts
}

// MaxScore returns exactly what scoring every matching document returns:
// the same documents, scores and tie order, for short and long queries,
// repeated terms, unknown terms, and k from 1 to beyond the matches.
func TestMaxScoreEqualsExhaustive(t *testing.T) {
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 11))
		texts := zipfTexts(rng, 300+rng.IntN(3000), 50+rng.IntN(3000))
		p, err := BuildPostings(context.Background(), len(texts), func(i int) string { return texts[i] }, nil)
		if err != nil {
			t.Fatal(err)
		}
		prm := BM25Params{K1: rng.Float64() * 2, B: rng.Float64()}
		bm, err := NewBM25(p, prm)
		if err != nil {
			t.Fatal(err)
		}
		z := rand.NewZipf(rng, 1.05, 1, 4000)
		for qi := range 200 {
			terms := make([]string, 1+rng.IntN(12))
			for i := range terms {
				terms[i] = fmt.Sprintf("w%d", z.Uint64())
			}
			if qi%7 == 0 { // a repeated term
				terms = append(terms, terms[0], terms[0])
			}
			for _, k := range []int{1, 2, 10, 100, len(texts) + 5} {
				want := bm.SearchExhaustive(terms, k)
				if got := bm.maxScore(bm.lookup(terms), k); !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d, %v, k %d:\nmaxscore   %v\nexhaustive %v", seed, terms, k, got, want)
				}
				if got := bm.SearchTerms(terms, k); !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d, %v, k %d: SearchTerms %v, exhaustive %v", seed, terms, k, got, want)
				}
			}
		}
	}
}

// The cursors' galloping search lands on the first posting at or after
// its target from any start.
func TestCursorSeek(t *testing.T) {
	docs := []uint32{2, 3, 5, 8, 13, 21, 34, 55, 89, 144}
	for start := range docs {
		for d := uint32(0); d < 150; d++ {
			c := cursor{docs: docs, pos: start}
			c.seek(d)
			want := start
			for want < len(docs) && docs[want] < d {
				want++
			}
			if c.pos != want {
				t.Fatalf("seek(%d) from %d: at %d, want %d", d, start, c.pos, want)
			}
		}
	}
}

// k1 past MaxK1 would make length norms overflow float32, every
// contribution 0, and a matching document uncounted; it is refused.
func TestBM25RefusesHugeK1(t *testing.T) {
	for _, k1 := range []float64{MaxK1 + 1, 1e39, math.Inf(1), math.NaN()} {
		if err := (BM25Params{K1: k1, B: 0.4}).Validate(); err == nil {
			t.Errorf("k1 %v accepted", k1)
		}
	}
	if err := (BM25Params{K1: MaxK1, B: 0.4}).Validate(); err != nil {
		t.Errorf("k1 %d refused: %v", MaxK1, err)
	}
}

// maxScore with no terms or k = 0 returns no hits, as exhaustive scoring.
func TestMaxScoreEmpty(t *testing.T) {
	texts := []string{"a b c", "b c d"}
	p, err := BuildPostings(context.Background(), len(texts), func(i int) string { return texts[i] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	bm, _ := NewBM25(p, DefaultBM25())
	for _, c := range []struct {
		ids []int
		k   int
	}{{nil, 10}, {bm.lookup([]string{"b"}), 0}} {
		if got := bm.maxScore(c.ids, c.k); len(got) != 0 {
			t.Errorf("maxScore(%v, %d) = %v", c.ids, c.k, got)
		}
	}
}

// MaxScore's block windows give exactly the exhaustive hits when a term's
// postings span many blocks and several lists: a base list that ends
// inside a block, then segments appended by Update, on a small vocabulary
// (every term in hundreds of documents), and on a Zipfian one over 20,000
// documents. Every base document holds "qq" once in 100–200 words and the
// appended ones hold it one to four times in at most six, so qq's blocks
// in the segments bound far higher than in the base: a block misplaced
// across lists loses hits.
func TestMaxScoreBlocksAcrossListsAndSegments(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	words := func(n int) []string {
		w := make([]string, n)
		for i := range w {
			w[i] = fmt.Sprintf("v%dx", rng.IntN(10))
		}
		return w
	}
	ctx := context.Background()
	texts := make([]string, 2000)
	for d := range texts {
		texts[d] = strings.Join(append(words(99+rng.IntN(101)), "qq"), " ")
	}
	p, err := BuildPostings(ctx, len(texts), func(i int) string { return texts[i] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{100, 60, 40} { // under an eighth: not flattened
		remap := make([]int32, len(texts))
		for d := range remap {
			remap[d] = int32(d) // keep every document: the append path
		}
		added := make([]string, n)
		for d := range added {
			added[d] = strings.Join(words(rng.IntN(3)), " ") + strings.Repeat(" qq", 1+rng.IntN(4))
		}
		if p, err = p.Update(ctx, remap, added); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, added...)
	}
	if p.Segments() < 2 {
		t.Fatal("fewer than two segments: the test needs lists that continue in segments")
	}
	checkMaxScore(t, p, func() []string { return append(words(rng.IntN(3)), "qq") }, 300)
	big := zipfTexts(rng, 20000, 5000)
	pb, err := BuildPostings(ctx, len(big), func(i int) string { return big[i] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	z := rand.NewZipf(rng, 1.05, 1, 6000)
	checkMaxScore(t, pb, func() []string {
		terms := make([]string, 1+rng.IntN(12))
		for i := range terms {
			terms[i] = fmt.Sprintf("w%d", z.Uint64())
		}
		return terms
	}, 150)
}

// checkMaxScore compares MaxScore with exhaustive scoring on queries from
// query, at k from 1 to past the documents.
func checkMaxScore(t *testing.T, p *Postings, query func() []string, queries int) {
	t.Helper()
	bm, err := NewBM25(p, DefaultBM25())
	if err != nil {
		t.Fatal(err)
	}
	for range queries {
		terms := query()
		for _, k := range []int{1, 5, 64, 1000, p.NumDocs() + 1} {
			want := bm.SearchExhaustive(terms, k)
			if got := bm.maxScore(bm.lookup(terms), k); !reflect.DeepEqual(got, want) {
				t.Fatalf("%v, k %d:\nmaxscore   %v\nexhaustive %v", terms, k, got, want)
			}
		}
	}
}

// A query of more than maxScoreTerms distinct terms is scored in full,
// however long its postings (MaxScore's work per window and candidate
// grows with the terms); repeats of fewer terms do not count.
func TestPrunableRefusesManyTerms(t *testing.T) {
	texts := make([]string, 3000)
	for d := range texts {
		texts[d] = fmt.Sprintf("common u%d u%d", d%50, (d*7)%50)
	}
	bm := bm25Over(t, texts)
	many := []string{"common"}
	for i := range maxScoreTerms {
		many = append(many, fmt.Sprintf("u%d", i))
	}
	if ids := bm.lookup(many); len(ids) != maxScoreTerms+1 || bm.prunable(ids, 1) {
		t.Fatalf("%d distinct terms: prunable", len(ids))
	}
	few := slices.Repeat([]string{"common", "u1"}, maxScoreTerms)
	if ids := bm.lookup(few); !bm.prunable(ids, 1) {
		t.Fatalf("two terms repeated %d times: not prunable", maxScoreTerms)
	}
}

// Only a term of more than one block keeps its block bounds cached: a
// rare term's are made again from its few postings, so querying the
// vocabulary does not pin memory per term.
func TestTermStatsCachesOnlyLongLists(t *testing.T) {
	texts := make([]string, 1000)
	for d := range texts {
		texts[d] = fmt.Sprintf("common rare%d", d)
	}
	bm := bm25Over(t, texts)
	for d := range 200 {
		bm.SearchTerms([]string{fmt.Sprintf("rare%d", d), "common"}, 10)
	}
	cached := 0
	bm.bounds.stats.Range(func(_, _ any) bool { cached++; return true })
	if cached != 1 {
		t.Fatalf("%d terms' block bounds cached, want 1 (common's)", cached)
	}
}

// Long postings alone do not pick MaxScore: terms of like bounds (a
// uniform vocabulary) leave it nothing to skip, and it took 5–36 times
// exhaustive scoring's time there.
func TestPrunableNeedsTermsOfUnlikeBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	texts := make([]string, 20000)
	for d := range texts {
		w := make([]string, 10)
		for i := range w {
			w[i] = fmt.Sprintf("u%d", rng.IntN(64))
		}
		texts[d] = strings.Join(w, " ")
	}
	bm := bm25Over(t, texts)
	for _, n := range []int{8, 16, 32} {
		terms := make([]string, n)
		for i := range terms {
			terms[i] = fmt.Sprintf("u%d", i)
		}
		if ids := bm.lookup(terms); bm.prunable(ids, 10) {
			t.Errorf("%d uniform terms (%d postings): prunable", n, len(ids))
		}
	}
}

// bm25Over is BM25 with the default parameters over texts.
func bm25Over(t *testing.T, texts []string) *BM25 {
	t.Helper()
	p, err := BuildPostings(context.Background(), len(texts), func(i int) string { return texts[i] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	bm, err := NewBM25(p, DefaultBM25())
	if err != nil {
		t.Fatal(err)
	}
	return bm
}
