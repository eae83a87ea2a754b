// Command gleanerpeer is gleaner's side of the peer comparisons in
// benchmarks/peers/run.sh.
//
//	gleanerpeer flat -dir D -n 1000000 -d 384   writes D/x.npy and D/q.npy (seeded), then
//	                                            times one streaming read of the matrix, exact
//	                                            top-10 search at each -batches size, and the
//	                                            bf16 and int8 searches with exact rescoring
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
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/engine"
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
	batchList := fs.String("batches", "1,64", "query batch sizes, comma-separated (at most 256)")
	candidates := fs.Int("candidates", 40, "quantized search: candidates rescored exactly per query")
	fs.Parse(args)
	batches, err := parseBatches(*batchList)
	if err != nil {
		return err
	}
	X, Q := random(*n**d, 11), random(256**d, 12)
	if err := writeNPY(filepath.Join(*dir, "x.npy"), X, *n, *d); err != nil {
		return err
	}
	if err := writeNPY(filepath.Join(*dir, "q.npy"), Q, 256, *d); err != nil {
		return err
	}
	out := map[string]any{"impl": kernels.DotBlockImpl(), "n": *n, "d": *d, "batches": batches, "candidates": *candidates}
	out["floor_s"] = median(timeReps(*reps, func() error { streamRead(X); return nil }))
	quant := map[string]*kernels.QuantRows{}
	for _, kind := range engine.QuantKinds() {
		start := time.Now()
		if quant[kind], err = kernels.Quantize(X, *n, *d, kind); err != nil {
			return err
		}
		out["quantize_"+kind+"_s"] = time.Since(start).Seconds()
		out[kind+"_bytes"] = quant[kind].Bytes()
	}
	ctx := context.Background()
	for _, batch := range batches {
		var exact [][]kernels.Hit
		times := timeReps(*reps, func() (err error) {
			exact, err = kernels.FlatIP(ctx, X, *n, *d, Q, batch, 10, 0)
			return err
		})
		out[fmt.Sprintf("batch%d_median_s", batch)] = median(times)
		out[fmt.Sprintf("batch%d_ids", batch)] = hitIDs(exact)
		for _, kind := range engine.QuantKinds() {
			var got [][]kernels.Hit
			times := timeReps(*reps, func() (err error) {
				got, err = kernels.SearchQuantized(ctx, quant[kind], X, Q, batch, 10, *candidates, 0)
				return err
			})
			out[fmt.Sprintf("%s_batch%d_median_s", kind, batch)] = median(times)
			out[fmt.Sprintf("%s_batch%d_recall", kind, batch)] = recall(got, exact)
		}
	}
	out["batch1_floor_ratios"] = floorPairs(ctx, X, *n, *d, Q, 3**reps)
	return json.NewEncoder(os.Stdout).Encode(out)
}

// floorPairs times a batch-1 scan right after a streaming read, pairs
// times over, and returns each pair's ratio (scan / read): the VM's memory
// speed drifts between the floor's timing and the sweep's, and a pair's
// two reads see the same machine.
func floorPairs(ctx context.Context, X []float32, n, d int, Q []float32, pairs int) []float64 {
	var ratios []float64
	for range pairs {
		floor := timeReps(1, func() error { streamRead(X); return nil })[0]
		scan := timeReps(1, func() error {
			_, err := kernels.FlatIP(ctx, X, n, d, Q, 1, 10, 0)
			return err
		})[0]
		ratios = append(ratios, scan/floor)
	}
	return ratios
}

// parseBatches reads -batches.
func parseBatches(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || b < 1 || b > 256 {
			return nil, fmt.Errorf("-batches: %q is not a batch size in 1..256", f)
		}
		out = append(out, b)
	}
	return out, nil
}

// timeReps runs fn reps times and returns each run's seconds.
func timeReps(reps int, fn func() error) []float64 {
	var times []float64
	for r := 0; r < reps; r++ {
		start := time.Now()
		if err := fn(); err != nil {
			fmt.Fprintln(os.Stderr, "gleanerpeer:", err)
			os.Exit(1)
		}
		times = append(times, time.Since(start).Seconds())
	}
	return times
}

// streamRead reads every byte of X once, split over the cores as the scan
// splits its rows: the memory floor of a batch-1 scan.
func streamRead(X []float32) uint64 {
	words := unsafe.Slice((*uint64)(unsafe.Pointer(&X[0])), len(X)/2)
	workers := runtime.GOMAXPROCS(0)
	sums := make([]uint64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		part := words[w*len(words)/workers : (w+1)*len(words)/workers]
		wg.Add(1)
		go func() {
			defer wg.Done()
			var a, b, c, e uint64
			i := 0
			for ; i+4 <= len(part); i += 4 {
				a, b, c, e = a^part[i], b^part[i+1], c^part[i+2], e^part[i+3]
			}
			sums[w] = a ^ b ^ c ^ e
		}()
	}
	wg.Wait()
	var x uint64
	for _, s := range sums {
		x ^= s
	}
	return x
}

func hitIDs(res [][]kernels.Hit) [][]int32 {
	ids := make([][]int32, len(res))
	for i, hs := range res {
		for _, h := range hs {
			ids[i] = append(ids[i], h.Index)
		}
	}
	return ids
}

// recall is the share of the exact top-k rows got found.
func recall(got, exact [][]kernels.Hit) float64 {
	found, total := 0, 0
	for q := range exact {
		in := map[int32]bool{}
		for _, h := range got[q] {
			in[h.Index] = true
		}
		for _, h := range exact[q] {
			total++
			if in[h.Index] {
				found++
			}
		}
	}
	return float64(found) / float64(max(total, 1))
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
