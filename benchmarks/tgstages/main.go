// Command tgstages times nexusrag and linearrag stage by stage over an
// index's questions (issue: scale): the per-stage p50 of their Trace and
// the whole query's p50/p99, with an optional CPU profile. The index must
// hold a Tri-Graph (gleaner graph build --kind trigraph).
//
//	go run ./benchmarks/tgstages -index /tmp/gs/tri -queries /tmp/gs/corpus-100000/queries.jsonl
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log"
	"maps"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gleaner-rag/gleaner/benchmarks/internal/methodspec"
	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	_ "github.com/gleaner-rag/gleaner/kernels/cpu"
	_ "github.com/gleaner-rag/gleaner/methods"
	"github.com/gleaner-rag/gleaner/methods/trigraph"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func main() {
	dir := flag.String("index", "", "an index with a Tri-Graph")
	qfile := flag.String("queries", "", "a queries.jsonl (questions asked in order)")
	limit := flag.Int("limit", 300, "questions asked (after -skip)")
	skip := flag.Int("skip", 0, "questions left out first")
	methods := flag.String("methods", "nexusrag,linearrag", "methods timed, comma-separated (name or name?setting=value&…)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the timed queries to this file")
	showSlowest := flag.Int("slowest", 0, "also print the stages of this many slowest questions")
	solves := flag.Int("solves", 0, "also time this many PageRank solves alone on the Tri-Graph's graph (a fixed dense restart), before the questions")
	flag.Parse()
	if *dir == "" || *qfile == "" || *limit < 1 || *skip < 0 || *solves < 0 || *showSlowest < 0 {
		log.Fatal("tgstages: -index and -queries are required; -limit ≥ 1, -skip ≥ 0, -solves ≥ 0, -slowest ≥ 0")
	}
	qs, err := corpus.ReadQueries(*qfile, nil, corpus.ReadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	qs = qs[min(*skip, len(qs)):]
	qs = qs[:min(*limit, len(qs))]
	if len(qs) == 0 {
		log.Fatal("tgstages: no question left")
	}
	ix, err := index.Open(*dir, store.OpenOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer ix.Close()
	be, err := engine.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				log.Printf("tgstages: %s: %v", *cpuprofile, err)
			}
		}()
	}
	if *solves > 0 {
		if err := timeSolves(ix, *solves); err != nil {
			log.Fatal(err)
		}
	}
	for _, spec := range strings.Split(*methods, ",") {
		if err := timeMethod(ix, be, spec, qs, *showSlowest); err != nil {
			log.Fatal(err)
		}
	}
}

// timeMethod asks every question once, after one warm-up question, and
// prints the stages' p50s and the whole query's p50 and p99.
func timeMethod(ix *index.Index, be engine.Backend, spec string, qs []corpus.Query, showSlowest int) error {
	cfg, err := methodspec.Config(spec)
	if err != nil {
		return err
	}
	m, err := retrieve.New(ix, retrieve.Env{Backend: be}, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if err := retrieve.CloseAll(context.Background(), m); err != nil {
			log.Printf("tgstages: closing %s: %v", spec, err)
		}
	}()
	tm, ok := m.(*trigraph.Method)
	if !ok {
		return fmt.Errorf("tgstages: %s is not a Tri-Graph method", spec)
	}
	ctx := context.Background()
	if _, _, err := tm.Trace(ctx, retrieve.Query{Text: qs[0].Text}, 10); err != nil {
		return err
	}
	stages := map[string][]float64{}
	var whole, sweeps []float64
	certified := 0
	type slow struct {
		ms     float64
		id     string
		sweeps int
		stages map[string]time.Duration
	}
	var slowest []slow
	for _, q := range qs {
		start := time.Now()
		_, tr, err := tm.Trace(ctx, retrieve.Query{Text: q.Text}, 10)
		if err != nil {
			return fmt.Errorf("%s: question %s: %w", spec, q.ID, err)
		}
		whole = append(whole, ms(time.Since(start)))
		slowest = append(slowest, slow{whole[len(whole)-1], q.ID, tr.Sweeps, tr.Stages})
		if tr.Sweeps > 0 {
			sweeps = append(sweeps, float64(tr.Sweeps))
		}
		if tr.Certified {
			certified++
		}
		for s, d := range tr.Stages {
			stages[s] = append(stages[s], ms(d))
		}
	}
	fmt.Printf("%s over %d questions: p50 %.2f ms, p99 %.2f ms; stage p50 (ms, over the questions that ran it):", spec, len(qs), pct(whole, 0.5), pct(whole, 0.99))
	names := make([]string, 0, len(stages))
	for s := range stages {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		fmt.Printf(" %s %.2f (%d)", s, pct(stages[s], 0.5), len(stages[s]))
	}
	fmt.Println()
	slices.SortFunc(slowest, func(a, b slow) int { return cmp.Compare(b.ms, a.ms) })
	for _, s := range slowest[:min(showSlowest, len(slowest))] {
		fmt.Printf("  slow: question %s %.2f ms, %d sweeps:", s.id, s.ms, s.sweeps)
		for _, n := range slices.Sorted(maps.Keys(s.stages)) {
			fmt.Printf(" %s %.2f", n, ms(s.stages[n]))
		}
		fmt.Println()
	}
	if len(sweeps) > 0 {
		fmt.Printf("%s PageRank: %d solves, sweeps p50 %.0f, max %.0f; %d stopped when the top 10 were certain\n", spec, len(sweeps), pct(sweeps, 0.5), pct(sweeps, 1), certified)
	}
	return nil
}

// timeSolves times n solves of the Tri-Graph's PageRank (as nexusrag's,
// with adjacent passages) for one restart vector: every passage's mass in
// [0.05, 0.1) and 50 entities' 0.3, to the methods' damping and
// tolerance; it prints the median, the best and the bytes allocated per
// solve.
func timeSolves(ix *index.Index, n int) error {
	tg, err := trigraph.Of(ix)
	if err != nil {
		return err
	}
	adj, err := tg.PageRankGraph(true)
	if err != nil {
		return err
	}
	start := time.Now()
	plan := graphops.NewPPRPlan(adj)
	built := time.Since(start)
	reset := make([]float64, adj.N())
	for p := 0; p < tg.Passages; p++ {
		reset[p] = 0.05 * (1 + float64(p%7)/7)
	}
	for e := tg.Passages; e < min(adj.N(), tg.Passages+50); e++ {
		reset[e] = 0.3
	}
	o := trigraph.DefaultOptions()
	po := graphops.PPROptions{Damping: o.Damping, Tol: o.Tolerance, MaxIter: graphops.PPRIterations(o.Damping, o.Tolerance)}
	var times []float64
	var sweeps int
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		start := time.Now()
		_, it, err := plan.Solve(context.Background(), reset, po)
		if err != nil {
			return err
		}
		times, sweeps = append(times, ms(time.Since(start))), it
	}
	runtime.ReadMemStats(&after)
	fmt.Printf("PageRank solve alone (%d vertices, %d in the core; plan built in %v): %d sweeps, median %.2f ms, best %.2f ms, %.2f MB in %.1f allocations per solve\n",
		adj.N(), plan.Core(), built.Round(time.Millisecond), sweeps, pct(times, 0.5), pct(times, 0), float64(after.TotalAlloc-before.TotalAlloc)/float64(n)/1e6, float64(after.Mallocs-before.Mallocs)/float64(n))
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// pct is the q-quantile of xs (nearest rank).
func pct(xs []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
