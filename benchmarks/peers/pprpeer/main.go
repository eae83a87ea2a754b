// Command pprpeer is gleaner's side of the PageRank peer comparison in
// benchmarks/peers/ppr.sh.
//
//	pprpeer export -index I -kind mentions -out W   writes W/edges.tsv and W/resets.json
//	pprpeer kb -kb kb_partial.txt -out W            the same for a head|relation|tail knowledge graph
//	pprpeer run -work W [-damping 0.5] [-reps 5]    times gleaner PPR on every reset vector,
//	                                                writes W/gleaner.json (vectors and median times)
//	pprpeer push -work W                            local push vs exact PPR at three eps values
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: pprpeer export|kb|run|push [flags]")
		os.Exit(2)
	}
	cmds := map[string]func([]string) error{"export": export, "kb": kb, "run": run, "push": push}
	cmd, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintln(os.Stderr, "pprpeer: unknown command", os.Args[1])
		os.Exit(2)
	}
	if err := cmd(os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "pprpeer:", err)
		os.Exit(1)
	}
}

type graphFile struct {
	N     int
	Edges []graphops.Edge
}

func writeGraph(dir string, g graphFile) error {
	f, err := os.Create(filepath.Join(dir, "edges.tsv"))
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "%d\n", g.N)
	for _, e := range g.Edges {
		fmt.Fprintf(w, "%d\t%d\t%g\n", e.Src, e.Dst, e.W)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return writeResets(dir, g.N)
}

// writeResets draws 20 reset vectors: 10 sparse (5 random seeds with random
// weights, as query seeds are) and 10 dense (a random weight on every node,
// as HippoRAG's passage weights are).
func writeResets(dir string, n int) error {
	rng := rand.New(rand.NewPCG(2026, 11))
	resets := make([][]float64, 20)
	for i := range resets {
		r := make([]float64, n)
		if i < 10 {
			for j := 0; j < 5; j++ {
				r[rng.IntN(n)] = 0.1 + rng.Float64()
			}
		} else {
			for j := range r {
				r[j] = rng.Float64()
			}
		}
		resets[i] = r
	}
	b, err := json.Marshal(resets)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "resets.json"), b, 0o644)
}

func export(args []string) error {
	fs := flag.NewFlagSet("export", flag.ExitOnError)
	dir := fs.String("index", "", "gleaner index")
	kind := fs.String("kind", "", "edge kind (default all)")
	out := fs.String("out", "", "work folder")
	fs.Parse(args)
	ix, err := index.Open(*dir, store.OpenOptions{})
	if err != nil {
		return err
	}
	defer ix.Close()
	g := graphFile{N: ix.N()}
	out0 := &ix.Graph().Out
	for v := 0; v < ix.N(); v++ {
		for p := out0.Ptr[v]; p < out0.Ptr[v+1]; p++ {
			if k, _ := ix.RelationName(out0.Rel[p]); *kind == "" || k == *kind {
				g.Edges = append(g.Edges, graphops.Edge{Src: int32(v), Dst: out0.Idx[p], W: out0.W[p]})
			}
		}
	}
	return writeGraph(*out, g)
}

func kb(args []string) error {
	fs := flag.NewFlagSet("kb", flag.ExitOnError)
	path := fs.String("kb", "", "head|relation|tail triples")
	out := fs.String("out", "", "work folder")
	fs.Parse(args)
	f, err := os.Open(*path)
	if err != nil {
		return err
	}
	defer f.Close()
	ids := map[string]int32{}
	id := func(s string) int32 {
		if v, ok := ids[s]; ok {
			return v
		}
		ids[s] = int32(len(ids))
		return ids[s]
	}
	g := graphFile{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		parts := strings.Split(sc.Text(), "|")
		if len(parts) != 3 {
			return fmt.Errorf("%s:%d: want head|relation|tail", *path, line)
		}
		g.Edges = append(g.Edges, graphops.Edge{Src: id(parts[0]), Dst: id(parts[2]), W: 1})
	}
	g.N = len(ids)
	return writeGraph(*out, g)
}

func load(dir string) (*graphops.Adjacency, [][]float64, error) {
	f, err := os.Open(filepath.Join(dir, "edges.tsv"))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	n, err := strconv.Atoi(sc.Text())
	if err != nil {
		return nil, nil, err
	}
	var es []graphops.Edge
	for sc.Scan() {
		var e graphops.Edge
		fmt.Sscanf(sc.Text(), "%d\t%d\t%g", &e.Src, &e.Dst, &e.W)
		es = append(es, e)
	}
	g, err := graphops.Build(n, es, false)
	if err != nil {
		return nil, nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "resets.json"))
	if err != nil {
		return nil, nil, err
	}
	var resets [][]float64
	if err := json.Unmarshal(b, &resets); err != nil {
		return nil, nil, err
	}
	return graphops.Undirected(g, true, nil), resets, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	dir := fs.String("work", "", "work folder")
	damping := fs.Float64("damping", 0.5, "damping")
	reps := fs.Int("reps", 5, "repetitions per reset vector")
	fs.Parse(args)
	a, resets, err := load(*dir)
	if err != nil {
		return err
	}
	out := struct {
		N, Edges int
		Vectors  [][]float64
		MedianS  []float64
		Iters    []int
		// The PPRPlan (leaves eliminated, Gauss–Seidel over the core) on
		// the same resets: its build once, its solves, and its largest
		// difference from PersonalizedPageRank's vectors.
		PlanBuildS, PlanMaxDiff float64
		PlanMedianS             []float64
		PlanCore                int
	}{N: a.N(), Edges: int(a.Ptr[a.N()] / 2)}
	start := time.Now()
	plan := graphops.NewPPRPlan(a)
	out.PlanBuildS, out.PlanCore = time.Since(start).Seconds(), plan.Core()
	for _, r := range resets {
		var times []float64
		var pi []float64
		var it int
		for k := 0; k < *reps; k++ {
			start := time.Now()
			pi, it, err = graphops.PersonalizedPageRank(context.Background(), a, r, graphops.PPROptions{Damping: *damping, Tol: 1e-10, MaxIter: 1000})
			if err != nil {
				return err
			}
			times = append(times, time.Since(start).Seconds())
		}
		out.Vectors, out.MedianS, out.Iters = append(out.Vectors, pi), append(out.MedianS, median(times)), append(out.Iters, it)
		times = times[:0]
		for k := 0; k < *reps; k++ {
			start := time.Now()
			sol, _, err := plan.Solve(context.Background(), r, graphops.PPROptions{Damping: *damping, Tol: 1e-10, MaxIter: 1000})
			if err != nil {
				return err
			}
			times = append(times, time.Since(start).Seconds())
			for i := range sol {
				out.PlanMaxDiff = max(out.PlanMaxDiff, math.Abs(sol[i]-pi[i]))
			}
		}
		out.PlanMedianS = append(out.PlanMedianS, median(times))
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(*dir, "gleaner.json"), b, 0o644)
}

func push(args []string) error {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	dir := fs.String("work", "", "work folder")
	fs.Parse(args)
	a, resets, err := load(*dir)
	if err != nil {
		return err
	}
	fmt.Printf("%-8s %12s %12s %14s %12s %10s\n", "eps", "top10 overlap", "L1 error", "push ms (med)", "exact ms", "pushes")
	for _, eps := range []float64{1e-4, 1e-6, 1e-8} {
		var overlap, l1, pt, et []float64
		var pushes []float64
		for _, r := range resets[:10] { // the sparse (query-like) resets
			sparse := map[int32]float64{}
			for v, x := range r {
				if x > 0 {
					sparse[int32(v)] = x
				}
			}
			start := time.Now()
			exact, _, err := graphops.PersonalizedPageRank(context.Background(), a, r, graphops.PPROptions{Damping: 0.5, Tol: 1e-12, MaxIter: 1000})
			if err != nil {
				return err
			}
			et = append(et, time.Since(start).Seconds()*1e3)
			start = time.Now()
			res, err := graphops.LocalPPR(context.Background(), a, sparse, 0.5, eps)
			if err != nil {
				return err
			}
			pt = append(pt, time.Since(start).Seconds()*1e3)
			overlap = append(overlap, top10Overlap(exact, res.P))
			var e float64
			for v, x := range exact {
				e += math.Abs(x - res.P[int32(v)])
			}
			l1, pushes = append(l1, e), append(pushes, float64(res.Pushes))
		}
		fmt.Printf("%-8g %12.3f %12.2e %14.3f %12.3f %10.0f\n", eps, mean(overlap), mean(l1), median(pt), median(et), mean(pushes))
	}
	return nil
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func top10Overlap(exact []float64, approx map[int32]float64) float64 {
	top := func(score func(int) float64, n int) map[int]bool {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int {
			sa, sb := score(a), score(b)
			switch {
			case sa > sb:
				return -1
			case sa < sb:
				return 1
			}
			return a - b
		})
		m := map[int]bool{}
		for _, i := range idx[:10] {
			m[i] = true
		}
		return m
	}
	a := top(func(i int) float64 { return exact[i] }, len(exact))
	b := top(func(i int) float64 { return approx[int32(i)] }, len(exact))
	same := 0
	for i := range a {
		if b[i] {
			same++
		}
	}
	return float64(same) / 10
}
