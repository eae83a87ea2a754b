package lexical

import (
	"context"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestUpdateEqualsBuild checks Postings.Update against BuildPostings over
// the final texts, through random deletes and additions.
func TestUpdateEqualsBuild(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"}
	text := func() string {
		s := ""
		for k := rng.IntN(12); k >= 0; k-- {
			s += words[rng.IntN(len(words))] + fmt.Sprint(rng.IntN(3)) + " "
		}
		if rng.IntN(4) == 0 {
			s += fmt.Sprintf("novel%d ", rng.IntN(1000)) // a word the postings may not have yet
		}
		return s
	}
	ctx := context.Background()
	var texts []string
	for range 30 {
		texts = append(texts, text())
	}
	p, err := BuildPostings(ctx, len(texts), func(i int) string { return texts[i] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	for step := range 40 {
		remap := make([]int32, len(texts))
		var next []string
		for d := range texts {
			remap[d] = -1
			if step%2 == 1 || rng.IntN(5) > 0 { // odd steps keep every document: the append path
				remap[d] = int32(len(next))
				next = append(next, texts[d])
			}
		}
		var added []string
		for k := rng.IntN(8); k > 0; k-- {
			added = append(added, text())
		}
		q, err := p.Update(ctx, remap, added)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(next, added...)
		want, err := BuildPostings(ctx, len(texts), func(i int) string { return texts[i] }, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(q.Flat(), want) {
			t.Fatalf("step %d: updated postings (%d segments) differ from a build of the final texts", step, q.Segments())
		}
		checkSameBM25(t, q, want, texts, step)
		p = q
	}
}

func TestUpdateRefusesBadRemap(t *testing.T) {
	p, err := BuildPostings(context.Background(), 3, func(i int) string { return "a b" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, remap := range [][]int32{{0, 1}, {1, 0, 2}, {0, 2, -1}} {
		if _, err := p.Update(context.Background(), remap, nil); err == nil {
			t.Errorf("remap %v accepted", remap)
		}
	}
}

// checkSameBM25 checks that BM25 over got (which may hold segments)
// scores and ranks as over want, through every search path.
func checkSameBM25(t *testing.T, got, want *Postings, texts []string, step int) {
	t.Helper()
	g, err := NewBM25(got, DefaultBM25())
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewBM25(want, DefaultBM25())
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range texts {
		for _, k := range []int{1, 3, len(texts)} {
			if a, b := g.Search(q, k), w.Search(q, k); !reflect.DeepEqual(a, b) {
				t.Fatalf("step %d (%d segments): text %d, k %d: %v, want %v", step, got.Segments(), i, k, a, b)
			}
			terms := Analyze(q)
			if a, b := g.maxScore(g.lookup(terms), k), w.exhaustive(w.lookup(terms), k); !reflect.DeepEqual(a, b) {
				t.Fatalf("step %d: text %d, k %d: MaxScore %v, want %v", step, i, k, a, b)
			}
		}
		words := make([]uint64, (got.NumDocs()+63)/64) // every other document
		for d := 0; d < got.NumDocs(); d += 2 {
			words[d/64] |= 1 << (d % 64)
		}
		gs, err := g.NewSubset(words)
		if err != nil {
			t.Fatal(err)
		}
		ws, err := w.NewSubset(words)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := g.SearchWithin(q, 5, gs), w.SearchWithin(q, 5, ws); !reflect.DeepEqual(a, b) {
			t.Fatalf("step %d: text %d within a subset: %v, want %v", step, i, a, b)
		}
		gm, wm := g.Match(q, nil), w.Match(q, nil)
		if !reflect.DeepEqual(gm.Score, wm.Score) {
			t.Fatalf("step %d: text %d: Match scores differ", step, i)
		}
		gm.Release()
		wm.Release()
		ids := g.TermIDs(q)
		for d := range got.NumDocs() {
			wids := w.TermIDs(q)
			if a, b := g.ScoreDoc(ids, uint32(d)), w.ScoreDoc(wids, uint32(d)); a != b {
				t.Fatalf("step %d: ScoreDoc(text %d, doc %d) = %v, want %v", step, i, d, a, b)
			}
		}
	}
}

// TestAppendSegmentsEqualBuild appends a few documents at a time to a
// larger base, so segments pile up, merge and flatten past an eighth of
// the documents, and checks the postings and every BM25 path against a
// build at each step.
func TestAppendSegmentsEqualBuild(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 19))
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}
	text := func() string {
		s := ""
		for k := 1 + rng.IntN(10); k > 0; k-- {
			s += words[rng.IntN(len(words))] + fmt.Sprint(rng.IntN(4)) + " "
		}
		if rng.IntN(3) == 0 {
			s += fmt.Sprintf("new%d ", rng.IntN(10000))
		}
		return s
	}
	ctx := context.Background()
	var texts []string
	for range 300 {
		texts = append(texts, text())
	}
	p, err := BuildPostings(ctx, len(texts), func(i int) string { return texts[i] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	most, flattened, merged := 0, 0, 0
	for step := range 60 {
		remap := make([]int32, len(texts))
		for d := range remap {
			remap[d] = int32(d)
		}
		added := []string{text()}
		if rng.IntN(2) == 0 {
			added = append(added, text())
		}
		q, err := p.Update(ctx, remap, added)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, added...)
		want, err := BuildPostings(ctx, len(texts), func(i int) string { return texts[i] }, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(q.Flat(), want) {
			t.Fatalf("step %d (%d segments): flat postings differ from a build", step, q.Segments())
		}
		if q.NumPostings() != want.NumPostings() || q.Terms.Len() != want.Terms.Len() {
			t.Fatalf("step %d: %d postings %d terms, want %d %d", step, q.NumPostings(), q.Terms.Len(), want.NumPostings(), want.Terms.Len())
		}
		for t2 := range want.Terms.Len() {
			if w := want.Terms.Term(t2); q.Terms.Term(q.Terms.Lookup(w)) != w {
				t.Fatalf("step %d: term %q not found again", step, w)
			}
		}
		if step%5 == 0 {
			checkSameBM25(t, q, want, texts[len(texts)-40:], step)
		}
		switch {
		case q.Segments() == 0 && p.Segments() > 0:
			flattened++
		case q.Segments() <= p.Segments():
			merged++
		}
		most = max(most, q.Segments())
		p = q
	}
	if most < 3 || most > maxSegments || merged == 0 || flattened == 0 {
		t.Fatalf("segments reached %d (want 3 to %d), merged %d times, flattened %d times", most, maxSegments, merged, flattened)
	}
}

// TestMergeTailIsABinaryCounter: segments of one size merge as a binary
// counter's bits carry (as many segments as ones in the count), and
// segments each smaller than the last stop at maxSegments.
func TestMergeTailIsABinaryCounter(t *testing.T) {
	ctx := context.Background()
	seg := func(first uint32, postings int) *segment {
		return &segment{first: first, terms: []int32{0}, ptr: []int64{0, int64(postings)}, doc: make([]uint32, postings), tf: make([]uint32, postings)}
	}
	var segs []*segment
	for n := 1; n <= 100; n++ {
		segs = mergeTail(ctx, append(segs, seg(uint32(n), 4)))
		if want := bits.OnesCount(uint(n)); len(segs) != want {
			t.Fatalf("after %d appends of one size: %d segments, want %d", n, len(segs), want)
		}
	}
	segs = nil
	most := 0
	for n := range 40 {
		segs = mergeTail(ctx, append(segs, seg(uint32(n), 1000-n)))
		if len(segs) > maxSegments {
			t.Fatalf("after %d appends of falling sizes: %d segments", n+1, len(segs))
		}
		most = max(most, len(segs))
	}
	if most != maxSegments {
		t.Fatalf("falling sizes: at most %d segments, want %d", most, maxSegments)
	}
}
