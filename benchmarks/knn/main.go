// Command knn times the kNN chunk graph's lexical neighbours
// (graphops.LexicalNeighbours, the knn build's lexical half) on an index
// at several budgets (--lex-budget), and measures what each budget gives
// up against the exact neighbours: on a seeded sample of nodes, each
// node's exact top-k shared-term counts are found by counting its
// postings in full, and compared with the shared counts of the neighbours
// the budget chose. A budget of 0 sets no bound (exact; quadratic in the
// postings at worst).
//
//	go run ./benchmarks/knn -index /tmp/gleaner-scale/index-1000000 -budgets 16384,65536,262144
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
)

func main() {
	dir := flag.String("index", "", "index folder")
	budgets := flag.String("budgets", "16384,65536,262144", "lexical budgets, comma-separated (0: no bound, exact)")
	k := flag.Int("k", 1, "lexical neighbours per node")
	sample := flag.Int("sample", 1000, "nodes whose exact neighbours are counted")
	seed := flag.Uint64("seed", 1, "seed of the sample")
	flag.Parse()
	if *dir == "" || *k < 1 || *sample < 1 {
		log.Fatal("knn: -index is required; -k and -sample must be ≥ 1")
	}
	bs, err := parseBudgets(*budgets)
	if err != nil {
		log.Fatal(err)
	}
	ix, err := index.Open(*dir, store.OpenOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer ix.Close()
	p := ix.TermDocs()
	base := graphops.DefaultKNNOptions()
	base.Lexical = *k
	maxDF := int64(base.MaxDFRatio * float64(p.N))
	nodes := sampleNodes(p.N, *sample, *seed)
	terms := termsOf(p, nodes, maxDF)
	exact := exactCounts(p, nodes, terms, *k)
	fmt.Printf("%d nodes, k %d, max df %d; exact counts on %d sampled nodes\n\n", p.N, *k, maxDF, len(nodes))
	fmt.Println("| budget | wall | sampled nodes with the exact top-k counts | mean shortfall of shared terms |")
	fmt.Println("|---:|---:|---:|---:|")
	for _, b := range bs {
		o := base
		o.LexicalBudget = b
		start := time.Now()
		got, err := graphops.LexicalNeighbours(context.Background(), p, o)
		if err != nil {
			log.Fatal(err)
		}
		wall := time.Since(start)
		same, shortfall := compare(p, nodes, terms, exact, got)
		fmt.Printf("| %d | %.1f s | %d / %d | %.4f |\n", b, wall.Seconds(), same, len(nodes), shortfall)
	}
}

func parseBudgets(s string) ([]int64, error) {
	var bs []int64
	for _, f := range strings.Split(s, ",") {
		b, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || b < 0 {
			return nil, fmt.Errorf("knn: -budgets: %q is not a budget ≥ 0", f)
		}
		bs = append(bs, b)
	}
	return bs, nil
}

// sampleNodes draws m distinct nodes of n, ascending.
func sampleNodes(n, m int, seed uint64) []int32 {
	r := rand.New(rand.NewPCG(seed, 2))
	perm := r.Perm(n)[:min(m, n)]
	out := make([]int32, len(perm))
	for i, v := range perm {
		out[i] = int32(v)
	}
	slices.Sort(out)
	return out
}

// termsOf lists the terms (df ≤ maxDF) of each sampled node.
func termsOf(p graphops.TermDocs, nodes []int32, maxDF int64) map[int32][]int32 {
	terms := make(map[int32][]int32, len(nodes))
	for _, d := range nodes {
		terms[d] = nil
	}
	for t := 0; t+1 < len(p.Ptr); t++ {
		if p.Ptr[t+1]-p.Ptr[t] > max(maxDF, 1) {
			continue
		}
		for _, d := range p.Doc[p.Ptr[t]:p.Ptr[t+1]] {
			if ts, ok := terms[int32(d)]; ok {
				terms[int32(d)] = append(ts, int32(t))
			}
		}
	}
	return terms
}

// exactCounts is each sampled node's top-k shared-term counts, descending,
// from its postings (terms: termsOf's) read in full.
func exactCounts(p graphops.TermDocs, nodes []int32, terms map[int32][]int32, k int) map[int32][]int {
	count := make([]int, p.N)
	out := make(map[int32][]int, len(nodes))
	for _, d := range nodes {
		var touched []uint32
		for _, t := range terms[d] {
			for _, e := range p.Doc[p.Ptr[t]:p.Ptr[t+1]] {
				if e == uint32(d) {
					continue
				}
				if count[e] == 0 {
					touched = append(touched, e)
				}
				count[e]++
			}
		}
		cs := make([]int, 0, len(touched))
		for _, e := range touched {
			cs = append(cs, count[e])
			count[e] = 0
		}
		slices.SortFunc(cs, func(a, b int) int { return b - a })
		out[d] = slices.Clone(cs[:min(k, len(cs))]) // not the whole count list
	}
	return out
}

// compare counts the sampled nodes whose chosen neighbours share as many
// terms as the exact top k, and the mean relative shortfall of the sum.
func compare(p graphops.TermDocs, nodes []int32, terms map[int32][]int32, exact map[int32][]int, got [][]int32) (int, float64) {
	same, shortfall := 0, 0.0
	for _, d := range nodes {
		var cs []int
		for _, e := range got[d] {
			cs = append(cs, shared(p, terms[d], uint32(e)))
		}
		slices.SortFunc(cs, func(a, b int) int { return b - a })
		want, sumW, sumG := exact[d], 0, 0
		for _, c := range want {
			sumW += c
		}
		for _, c := range cs {
			sumG += c
		}
		if slices.Equal(cs, want) {
			same++
		}
		if sumW > 0 {
			shortfall += float64(sumW-sumG) / float64(sumW)
		}
	}
	return same, shortfall / float64(len(nodes))
}

// shared counts the terms whose postings hold e.
func shared(p graphops.TermDocs, terms []int32, e uint32) int {
	c := 0
	for _, t := range terms {
		if _, ok := slices.BinarySearch(p.Doc[p.Ptr[t]:p.Ptr[t+1]], e); ok {
			c++
		}
	}
	return c
}
