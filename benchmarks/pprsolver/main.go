// Command pprsolver measures ppr's two PageRank solvers on one synthetic
// index in one run: exact power iteration over the whole graph against
// local push from the seeds (ppr-solver push, at the default ε). For each
// it prints the per-query latency and, for push, the top-10 overlap with
// exact over the corpus's questions; both rankings' Recall@10 against the
// questions' gold passages shows what the approximation costs in quality.
//
//	go run ./benchmarks/pprsolver -nodes 100000
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/eval"
	"github.com/gleaner-rag/gleaner/index"
	_ "github.com/gleaner-rag/gleaner/kernels/cpu"
	_ "github.com/gleaner-rag/gleaner/methods"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func main() {
	nodes := flag.Int("nodes", 100000, "passages of the scale corpus (corpus/synth GenerateScale)")
	queries := flag.Int("queries", 300, "questions asked")
	work := flag.String("work", "", "folder for the index (default: a temporary one, removed)")
	flag.Parse()
	if *nodes < 100 || *queries < 1 {
		log.Fatal("pprsolver: -nodes ≥ 100 and -queries ≥ 1")
	}
	dir := *work
	if dir == "" {
		d, err := os.MkdirTemp("", "pprsolver")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	o := synth.DefaultScale(*nodes)
	o.Queries, o.Dev = *queries, 0
	c, err := synth.GenerateScale(o)
	if err != nil {
		log.Fatal(err)
	}
	ixDir := filepath.Join(dir, "ix")
	start := time.Now()
	if err = index.Build(context.Background(), c, ixDir, index.WithoutHead()); err != nil {
		log.Fatal(err)
	}
	built := time.Since(start)
	ix, err := index.Open(ixDir, store.OpenOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer ix.Close()
	be, err := engine.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("pprsolver: %d nodes, %d edges, %d questions; indexed in %v\n\n", ix.N(), len(c.Edges), len(c.Queries), built.Round(time.Second))
	exact := measure(ix, be, c.Queries, "exact")
	push := measure(ix, be, c.Queries, "push")
	var overlap float64
	for i := range exact.hits {
		overlap += eval.Overlap(push.hits[i], exact.hits[i])
	}
	fmt.Println("| solver | p50 ms | p99 ms | Recall@10 | top-10 overlap with exact |")
	fmt.Println("|---|---|---|---|---|")
	fmt.Printf("| exact | %.2f | %.2f | %.3f | 1 |\n", exact.p(0.5), exact.p(0.99), recall(ix, c.Queries, exact.hits))
	fmt.Printf("| push (ε 1e-6) | %.2f | %.2f | %.3f | %.3f |\n", push.p(0.5), push.p(0.99), recall(ix, c.Queries, push.hits), overlap/float64(len(exact.hits)))
	fmt.Printf("\nexact / push p50: %.1f×\n", exact.p(0.5)/push.p(0.5))
}

type run struct {
	hits [][]retrieve.Hit
	ms   []float64
}

func (r run) p(q float64) float64 {
	s := slices.Sorted(slices.Values(r.ms))
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// measure asks every question once (after one warm-up question) with the
// solver.
func measure(ix *index.Index, be engine.Backend, qs []corpus.Query, solver string) run {
	cfg, err := retrieve.NewConfig("ppr")
	if err != nil {
		log.Fatal(err)
	}
	if err := cfg.Set("ppr-solver", solver); err != nil {
		log.Fatal(err)
	}
	m, err := retrieve.New(ix, retrieve.Env{Backend: be}, cfg)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	m.Retrieve(ctx, retrieve.Query{Text: qs[0].Text}, 10)
	var r run
	for _, q := range qs {
		start := time.Now()
		hits, err := m.Retrieve(ctx, retrieve.Query{Text: q.Text}, 10)
		if err != nil {
			log.Fatal(err)
		}
		r.ms = append(r.ms, float64(time.Since(start).Microseconds())/1000)
		r.hits = append(r.hits, hits)
	}
	return r
}

// recall is the mean Recall@10 of the rankings against the questions' gold
// passages.
func recall(ix *index.Index, qs []corpus.Query, hits [][]retrieve.Hit) float64 {
	var sum float64
	for i, q := range qs {
		ids := make([]string, len(hits[i]))
		for j, h := range hits[i] {
			ids[j] = ix.NodeID(int(h.Index))
		}
		m, _ := eval.Score(ids, q.Judgements(), []int{10}) // a question without gold counts 0
		sum += m[eval.Name(eval.Recall, 10)]
	}
	return sum / float64(len(qs))
}
