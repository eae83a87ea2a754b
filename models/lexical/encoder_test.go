package lexical

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

type src struct{ titles, texts []string }

func (s src) Title(i int) string     { return s.titles[i] }
func (s src) Text(i int) string      { return s.texts[i] }
func (s src) Vector(i int) []float32 { return []float32{float32(i), 1} }
func (s src) indexText(i int) string { return s.titles[i] + "\n" + s.texts[i] }

func TestInteractionFeatures(t *testing.T) {
	s := src{
		titles: []string{"Aretha Franklin", "Detroit", "Memphis"},
		texts:  []string{"Aretha Franklin was a singer born in Memphis.", "Detroit is a city in Michigan.", "Memphis is a city on the Mississippi."},
	}
	p, _ := BuildPostings(context.Background(), 3, s.indexText, nil)
	bm, _ := NewBM25(p, DefaultBM25())
	m := &InteractionModel{P: p, BM: bm, Src: s, EmbedQuery: func(string) []float32 { return []float32{0, 1} }}
	q := m.Prepare("where was aretha franklin born")
	f := make([]float32, NumFeatures)
	m.Features(q, 0, f)
	hits := bm.Search("where was aretha franklin born", 3)
	if hits[0].Index != 0 || math.Abs(float64(f[0]-hits[0].Score)) > 1e-6 {
		t.Errorf("bm25 feature %v, search score %v", f[0], hits[0])
	}
	// query terms: where, aretha, franklin, born (was is a stopword); node 0 has 3 of 4
	if f[2] != 0.75 || f[5] != 1 || f[4] != 1 {
		t.Errorf("coverage %v, title contained %v, title share %v", f[2], f[5], f[4])
	}
	if f[3] != 1.0/3 { // bigrams where-aretha, aretha-franklin, franklin-born: one found
		t.Errorf("bigram overlap %v", f[3])
	}
	if math.Abs(float64(f[6])-1) > 1e-6 { // vectors (0,1) and (0,1)
		t.Errorf("cosine %v", f[6])
	}
	m.Features(q, 1, f)
	if f[0] != 0 || f[2] != 0 || f[5] != 0 || math.Abs(float64(f[6])-1/math.Sqrt2) > 1e-6 {
		t.Errorf("unrelated node: %v", f)
	}
	e := &Encoder{M: m}
	e.FitStandardization([]float32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3}, 2)
	pq, _ := e.Prepare(context.Background(), "aretha")
	out := make([]float32, 2*NumFeatures)
	if err := e.Encode(context.Background(), pq, []int32{0, 2}, out); err != nil {
		t.Fatal(err)
	}
	if e.Mean[0] != 2 || e.Std[0] != 1 {
		t.Errorf("standardisation %v %v", e.Mean, e.Std)
	}
}

// TestInteractionCacheEvicts: with fewer cache slots than nodes, nodes
// that share a slot evict each other, and every node's features stay
// those of an uncached model.
func TestInteractionCacheEvicts(t *testing.T) {
	s := src{
		titles: []string{"Aretha Franklin", "Detroit", "Memphis", "Mississippi", "Michigan"},
		texts: []string{"Aretha Franklin was a singer born in Memphis.", "Detroit is a city in Michigan.",
			"Memphis is a city on the Mississippi.", "The Mississippi river flows past Memphis.", "Michigan borders Detroit's river."},
	}
	p, _ := BuildPostings(context.Background(), len(s.titles), s.indexText, nil)
	bm, _ := NewBM25(p, DefaultBM25())
	small := &InteractionModel{P: p, BM: bm, Src: s, slots: 2}
	for round := range 3 {
		for _, q := range []string{"aretha franklin memphis", "detroit michigan river", "mississippi city"} {
			for i := range s.titles {
				whole := &InteractionModel{P: p, BM: bm, Src: s} // a fresh model: nothing cached
				want, got := make([]float32, NumFeatures), make([]float32, NumFeatures)
				whole.Features(whole.Prepare(q), i, want)
				small.Features(small.Prepare(q), i, got)
				if !slices.Equal(got, want) {
					t.Fatalf("round %d, %q, node %d: features %v with 2 slots, %v uncached", round, q, i, got, want)
				}
			}
		}
	}
	if len(small.nodes) != 2 {
		t.Errorf("the cache has %d slots, want 2", len(small.nodes))
	}
	held := 0
	for i := range small.nodes {
		if small.nodes[i].Load() != nil {
			held++
		}
	}
	if held != 2 {
		t.Errorf("%d nodes held after reranking 5, want 2", held)
	}
}

// TestTextFeaturesEqualFullAnalysis: the bigram and title features, which
// skip a node's text when the postings show it cannot hold a query bigram,
// equal those of analysing every node in full, on random corpora of a
// small vocabulary (bigrams common), whole and within subsets, cold and
// with the cache warm.
func TestTextFeaturesEqualFullAnalysis(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	vocab := strings.Fields("river city blues music memphis detroit the of a singer born franklin's 3.5 naïve Café running runs")
	phrase := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(w, " ")
	}
	for trial := range 30 {
		n := 8 + rng.IntN(24)
		s := src{titles: make([]string, n), texts: make([]string, n)}
		for i := range n {
			s.titles[i], s.texts[i] = phrase(rng.IntN(4)), phrase(rng.IntN(30))
		}
		p, _ := BuildPostings(context.Background(), n, func(i int) string {
			if s.titles[i] == "" {
				return s.texts[i]
			}
			return s.titles[i] + "\n" + s.texts[i]
		}, nil)
		bm, _ := NewBM25(p, DefaultBM25())
		m := &InteractionModel{P: p, BM: bm, Src: s, slots: 1 + rng.IntN(n)}
		words := [1]uint64{1}
		keep := 3 // of 4: a dense subset; or a sparse one, without many query terms
		if trial%2 == 1 {
			keep = 1
		}
		for i := range n {
			if rng.IntN(4) < keep {
				words[0] |= 1 << i
			}
		}
		sub, err := bm.NewSubset(words[:])
		if err != nil {
			t.Fatal(err)
		}
		for range 12 {
			text := phrase(1 + rng.IntN(7))
			for _, q := range []*QueryState{m.Prepare(text), m.PrepareWithin(text, sub)} {
				for _, i := range rng.Perm(2 * n) {
					i %= n
					got := make([]float32, NumFeatures)
					m.Features(q, i, got)
					title, body := Analyze(s.titles[i]), Analyze(s.texts[i])
					share, contained := titleMatch(q, title)
					if want := []float32{bigramOverlap(q, title, body), share, contained}; !slices.Equal(got[3:6], want) {
						t.Fatalf("trial %d, query %q, node %d (%q / %q): features 3–5 %v, full analysis %v",
							trial, text, i, s.titles[i], s.texts[i], got[3:6], want)
					}
				}
			}
		}
	}
}

// TestTextFeaturesPastHeldTerms: a query of more distinct terms than
// Features marks (64) falls back to analysing the node, and its bigram
// feature still equals full analysis.
func TestTextFeaturesPastHeldTerms(t *testing.T) {
	words := make([]string, 80)
	for i := range words {
		words[i] = fmt.Sprintf("w%dx", i)
	}
	s := src{titles: []string{"alpha beta", "gamma"}, texts: []string{strings.Join(words, " "), "delta"}}
	p, _ := BuildPostings(context.Background(), 2, s.indexText, nil)
	bm, _ := NewBM25(p, DefaultBM25())
	m := &InteractionModel{P: p, BM: bm, Src: s}
	q := m.Prepare(strings.Join(words, " ")) // 80 distinct terms, 79 bigrams, all in node 0
	got := make([]float32, NumFeatures)
	m.Features(q, 0, got)
	if want := bigramOverlap(q, Analyze(s.titles[0]), Analyze(s.texts[0])); got[3] != want || want != 1 {
		t.Errorf("bigram overlap %v, full analysis %v (want 1)", got[3], want)
	}
}
