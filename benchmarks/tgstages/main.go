// Command tgstages times nexusrag and linearrag stage by stage over an
// index's questions (issue: scale): the per-stage p50 of their Trace and
// the whole query's p50/p99, with an optional CPU profile. The index must
// hold a Tri-Graph (gleaner graph build --kind trigraph).
//
//	go run ./benchmarks/tgstages -index /tmp/gs/tri -queries /tmp/gs/corpus-100000/queries.jsonl
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/engine"
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
	flag.Parse()
	if *dir == "" || *qfile == "" || *limit < 1 || *skip < 0 {
		log.Fatal("tgstages: -index and -queries are required; -limit ≥ 1, -skip ≥ 0")
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
		defer pprof.StopCPUProfile()
	}
	for _, spec := range strings.Split(*methods, ",") {
		if err := timeMethod(ix, be, spec, qs); err != nil {
			log.Fatal(err)
		}
	}
}

// timeMethod asks every question once, after one warm-up question, and
// prints the stages' p50s and the whole query's p50 and p99.
func timeMethod(ix *index.Index, be engine.Backend, spec string, qs []corpus.Query) error {
	name, settings, _ := strings.Cut(spec, "?")
	cfg, err := retrieve.NewConfig(name)
	if err != nil {
		return err
	}
	for _, kv := range strings.Split(settings, "&") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if err := cfg.Set(k, v); err != nil {
			return err
		}
	}
	m, err := retrieve.New(ix, retrieve.Env{Backend: be}, cfg)
	if err != nil {
		return err
	}
	defer retrieve.CloseAll(context.Background(), m)
	tm, ok := m.(*trigraph.Method)
	if !ok {
		return fmt.Errorf("tgstages: %s is not a Tri-Graph method", spec)
	}
	ctx := context.Background()
	if _, _, err := tm.Trace(ctx, retrieve.Query{Text: qs[0].Text}, 10); err != nil {
		return err
	}
	stages := map[string][]float64{}
	var whole []float64
	for _, q := range qs {
		start := time.Now()
		_, tr, err := tm.Trace(ctx, retrieve.Query{Text: q.Text}, 10)
		if err != nil {
			return fmt.Errorf("%s: question %s: %w", spec, q.ID, err)
		}
		whole = append(whole, ms(time.Since(start)))
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
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// pct is the q-quantile of xs (nearest rank).
func pct(xs []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
