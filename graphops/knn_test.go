package graphops

import (
	"context"
	"errors"
	"math"
	"reflect"
	"sort"
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
	"github.com/gleaner-rag/gleaner/models/lexical"
)

// refKNN finds each document's best neighbours by brute force over all
// pairs: shared terms (df ≤ cap) and inner products.
func refKNN(p *lexical.Postings, vecs []float32, d, k1, k2 int, maxDF int64) map[[2]int32]bool {
	n := p.NumDocs()
	terms := make([]map[int]bool, n)
	for i := range terms {
		terms[i] = map[int]bool{}
	}
	for t := 0; t < p.Terms.Len(); t++ {
		if p.Ptr[t+1]-p.Ptr[t] > max(maxDF, 1) {
			continue
		}
		for _, doc := range p.Doc[p.Ptr[t]:p.Ptr[t+1]] {
			terms[doc][t] = true
		}
	}
	pairs := map[[2]int32]bool{}
	best := func(i, k int, score func(j int) float64) {
		type c struct {
			j int
			s float64
		}
		var cs []c
		for j := 0; j < n; j++ {
			if s := score(j); j != i && s > 0 {
				cs = append(cs, c{j, s})
			}
		}
		sort.SliceStable(cs, func(a, b int) bool { return cs[a].s > cs[b].s })
		for _, x := range cs[:min(k, len(cs))] {
			addPair(pairs, int32(i), int32(x.j))
		}
	}
	for i := 0; i < n; i++ {
		best(i, k1, func(j int) float64 {
			s := 0
			for t := range terms[i] {
				if terms[j][t] {
					s++
				}
			}
			return float64(s)
		})
		best(i, k2, func(j int) float64 {
			var s float64
			for c := 0; c < d; c++ {
				s += float64(vecs[i*d+c]) * float64(vecs[j*d+c])
			}
			return s + 10 // keep negative similarities eligible
		})
	}
	return pairs
}

func TestKNNEdgesMatchBruteForce(t *testing.T) {
	docs := []string{
		"graph retrieval with personalized pagerank", "pagerank on citation graphs", "dense vector retrieval",
		"vector search with exact top-k", "cross encoder reranking of passages", "passages and reranking",
		"knowledge graph entities and relations", "entities linked in a knowledge base",
	}
	p, err := lexical.BuildPostings(context.Background(), len(docs), func(i int) string { return docs[i] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := 3
	vecs := make([]float32, len(docs)*d)
	for i := range docs {
		x := []float64{math.Cos(float64(i)), math.Sin(float64(i)), 0.1 * float64(i%3)}
		nrm := math.Sqrt(x[0]*x[0] + x[1]*x[1] + x[2]*x[2])
		for c := range x {
			vecs[i*d+c] = float32(x[c] / nrm)
		}
	}
	es, err := KNNEdges(context.Background(), cpu.New(), TermDocs{N: p.NumDocs(), Ptr: p.Ptr, Doc: p.Doc}, vecs, d, KNNOptions{Lexical: 1, Semantic: 2, MaxDFRatio: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	want := refKNN(p, vecs, d, 1, 2, int64(0.5*float64(len(docs))))
	got := map[[2]int32]bool{}
	for _, e := range es {
		if e.Src >= e.Dst {
			t.Errorf("edge %v not in (min, max) order", e)
		}
		got[[2]int32{e.Src, e.Dst}] = true
	}
	if len(got) != len(want) {
		t.Fatalf("%d pairs, brute force %d: %v vs %v", len(got), len(want), got, want)
	}
	for pr := range want {
		if !got[pr] {
			t.Errorf("missing pair %v", pr)
		}
	}
	// Nearest (an HNSW graph's search in the index) gives the same pairs
	// when it answers exactly, from any number of workers, and its
	// errors stop the build.
	be := cpu.New()
	x, err := be.Bind(vecs)
	if err != nil {
		t.Fatal(err)
	}
	exactNearest := func(row int32, k int) ([]engine.Hit, error) {
		res, err := engine.SearchFlat(context.Background(), be, x, len(docs), d, vecs[int(row)*d:(int(row)+1)*d], 1, k)
		return res[0], err
	}
	viaNearest, err := KNNEdges(context.Background(), nil, TermDocs{N: p.NumDocs(), Ptr: p.Ptr, Doc: p.Doc}, vecs, d,
		KNNOptions{Lexical: 1, Semantic: 2, MaxDFRatio: 0.5, Nearest: exactNearest})
	if err != nil || !reflect.DeepEqual(viaNearest, es) {
		t.Errorf("via Nearest: %v (%v), exact scan %v", viaNearest, err, es)
	}
	boom := errors.New("boom")
	if _, err := KNNEdges(context.Background(), nil, TermDocs{N: p.NumDocs(), Ptr: p.Ptr, Doc: p.Doc}, vecs, d,
		KNNOptions{Semantic: 2, MaxDFRatio: 0.5, Nearest: func(int32, int) ([]engine.Hit, error) { return nil, boom }}); !errors.Is(err, boom) {
		t.Errorf("a failing Nearest: %v", err)
	}
	// Asking for more neighbours than there are nodes (up to the largest
	// int) means all of them, as n−1 does.
	all, err := KNNEdges(context.Background(), cpu.New(), TermDocs{N: p.NumDocs(), Ptr: p.Ptr, Doc: p.Doc}, vecs, d, KNNOptions{Lexical: len(docs) - 1, Semantic: len(docs) - 1, MaxDFRatio: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	huge, err := KNNEdges(context.Background(), cpu.New(), TermDocs{N: p.NumDocs(), Ptr: p.Ptr, Doc: p.Doc}, vecs, d, KNNOptions{Lexical: math.MaxInt, Semantic: math.MaxInt, MaxDFRatio: 0.5})
	if err != nil || !reflect.DeepEqual(huge, all) {
		t.Errorf("neighbours MaxInt: %d edges (%v), n−1: %d", len(huge), err, len(all))
	}
}
