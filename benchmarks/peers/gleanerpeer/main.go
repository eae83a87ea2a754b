// Command gleanerpeer is gleaner's side of the peer comparisons in
// benchmarks/peers/run.sh.
//
//	gleanerpeer flat -dir D -n 1000000 -d 384   writes D/x.npy and D/q.npy (seeded), then
//	                                            times exact top-10 search at batch 1 and 64
//	gleanerpeer bm25 -index I -queries Q        times BM25 top-100 over the queries
//
// Each prints one JSON object with median times and the top results, so
// the peer's answers can be checked against gleaner's.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gleanerpeer flat|bm25 [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "flat":
		err = flat(os.Args[2:])
	case "bm25":
		err = bm25(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gleanerpeer:", err)
		os.Exit(1)
	}
}

func writeNPY(path string, m []float32, rows, cols int) error {
	hdr := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", rows, cols)
	for (10+len(hdr)+1)%64 != 0 {
		hdr += " "
	}
	hdr += "\n"
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	f.Write([]byte("\x93NUMPY\x01\x00"))
	binary.Write(f, binary.LittleEndian, uint16(len(hdr)))
	f.Write([]byte(hdr))
	return binary.Write(f, binary.LittleEndian, m)
}

func random(n int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 3))
	m := make([]float32, n)
	for i := range m {
		m[i] = float32(rng.NormFloat64())
	}
	return m
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func flat(args []string) error {
	fs := flag.NewFlagSet("flat", flag.ExitOnError)
	dir := fs.String("dir", "", "output folder for x.npy and q.npy")
	n := fs.Int("n", 1_000_000, "rows")
	d := fs.Int("d", 384, "dimensions")
	reps := fs.Int("reps", 15, "timed repetitions")
	fs.Parse(args)
	X, Q := random(*n**d, 11), random(64**d, 12)
	if err := writeNPY(filepath.Join(*dir, "x.npy"), X, *n, *d); err != nil {
		return err
	}
	if err := writeNPY(filepath.Join(*dir, "q.npy"), Q, 64, *d); err != nil {
		return err
	}
	out := map[string]any{"impl": kernels.DotBlockImpl(), "n": *n, "d": *d}
	for _, batch := range []int{1, 64} {
		var times []float64
		var res [][]kernels.Hit
		for r := 0; r < *reps; r++ {
			start := time.Now()
			h, err := kernels.FlatIP(context.Background(), X, *n, *d, Q, batch, 10, 0)
			if err != nil {
				return err
			}
			times = append(times, time.Since(start).Seconds())
			res = h
		}
		ids := make([][]int32, len(res))
		for i, hs := range res {
			for _, h := range hs {
				ids[i] = append(ids[i], h.Index)
			}
		}
		out[fmt.Sprintf("batch%d_median_s", batch)] = median(times)
		out[fmt.Sprintf("batch%d_ids", batch)] = ids
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func bm25(args []string) error {
	fs := flag.NewFlagSet("bm25", flag.ExitOnError)
	dir := fs.String("index", "", "gleaner index")
	qpath := fs.String("queries", "", "queries.jsonl")
	reps := fs.Int("reps", 5, "passes over the queries")
	fs.Parse(args)
	ix, err := index.Open(*dir, store.OpenOptions{})
	if err != nil {
		return err
	}
	defer ix.Close()
	qs, err := corpus.ReadQueries(*qpath, nil, corpus.ReadOptions{})
	if err != nil {
		return err
	}
	var per []float64
	for r := 0; r < *reps; r++ {
		for _, q := range qs {
			start := time.Now()
			ix.BM25.Search(q.Text, 100)
			per = append(per, time.Since(start).Seconds())
		}
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"queries": len(qs), "median_s": median(per)})
}
