// Command ann compares gleaner's HNSW (graphops/hnsw) with FAISS's
// IndexHNSWFlat (Debian python3-faiss) in one run, on the same vectors and
// questions at the same M, efConstruction and efSearch (issue: scale,
// item 3); with -kind ivf, gleaner's inverted file (graphops/ivf) with
// FAISS's IndexIVFFlat at the same lists, training and nprobe.
//
// The vectors are LSA vectors of the scale corpus (corpus/synth,
// GenerateScale): the -index folder's own when -n equals its size, else
// the passages of a generated corpus of -n passages embedded with that
// index's LSA model (its basis fitted on its own, smaller corpus: the
// sample-fitted basis of a bounded-memory build). The questions are the
// corpus's: the dev questions choose efSearch (the smallest reaching the
// target recall), the test questions are reported.
//
// For each efSearch (nprobe) both sides answer every question one at a
// time on one thread (for ivf also on two sharing a question's lists); recall@10 is against exact search (kernels.FlatIP) over the same
// vectors; q/s is questions over wall time; both builds use 2 threads.
//
//	bash benchmarks/ann/run.sh INDEX N   # see run.sh
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/graphops/hnsw"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/progress"
	"github.com/gleaner-rag/gleaner/kernels"
)

const k = 10

type side struct {
	Build  float64     `json:"build_s"`
	Recall []float64   `json:"-"`
	QPS    []float64   `json:"qps"`
	IDs    [][][]int64 `json:"ids"`  // per ef, per question: the top 10 (FAISS)
	QPS2   []float64   `json:"qps2"` // ivf: two threads per question
	SQ8    *side       `json:"sq8"`  // ivf: FAISS's IndexIVFScalarQuantizer
}

// shape is what -reuse reads back: how many of q.f32's questions are dev
// questions (they come first) and the width.
type shape struct{ Dims, Dev, Test int }

func main() {
	dir := flag.String("index", "", "a scale index (bash benchmarks/scale/run.sh builds them)")
	n := flag.Int("n", 0, "vectors: 0 for the index's own, else a generated corpus of this many passages embedded with the index's LSA")
	m := flag.Int("m", 32, "M")
	efc := flag.Int("efc", 200, "efConstruction")
	keep := flag.Bool("keep-pruned", false, "gleaner alone: also build with KeepPruned and compare (no FAISS side)")
	efs := flag.String("ef", "64,128,256,512,1024,1536,2048", "efSearch values")
	target := flag.Float64("target", 0.95, "recall@10 the dev questions choose efSearch for")
	work := flag.String("work", "/tmp/gleaner-ann", "folder for the vectors the peer reads")
	peer := flag.String("peer", "benchmarks/ann/faiss_peer.py", "the FAISS side (empty: gleaner alone)")
	out := flag.String("out", "", "file for the markdown table (default: stdout only)")
	kind := flag.String("kind", "hnsw", "hnsw or ivf")
	lists := flag.Int("lists", 0, "ivf: lists (0: 4·√N rounded to a power of two, gleaner's default)")
	probes := flag.String("nprobe", "32,48,64,80,96,128", "ivf: nprobe values")
	reuse := flag.Bool("reuse", false, "read the vectors and questions an earlier run wrote to -work instead of making them")
	flag.Parse()
	ef, err := parseInts(*efs)
	if *kind == "ivf" {
		ef, err = parseInts(*probes)
	}
	if err != nil || (*dir == "" && !*reuse) || (*kind != "hnsw" && *kind != "ivf") {
		log.Fatalf("want -index (or -reuse), -kind hnsw or ivf, and -ef / -nprobe a list of integers: %v", err)
	}
	ctx := context.Background()
	X, Q, sh := load(ctx, *dir, *n, *work, *reuse)
	d, ndev := sh.Dims, sh.Dev
	rows := len(X) / d
	log.Printf("%d vectors of %d dims, %d test and %d dev questions", rows, d, sh.Test, sh.Dev)
	nq := len(Q) / d
	exact, err := kernels.FlatIP(ctx, X, rows, d, Q, nq, k, 2)
	if err != nil {
		log.Fatal(err)
	}
	if *kind == "ivf" {
		runIVF(ctx, X, rows, Q, sh, exact, *lists, ef, *target, *peer, *work, *out)
		return
	}
	g := gleaner(ctx, X, rows, d, Q, exact, ndev, *m, *efc, ef)
	if *keep {
		k := gleanerWith(ctx, X, rows, d, Q, exact, ndev, *m, *efc, ef, true)
		for i, e := range ef {
			fmt.Printf("ef %d: recall@10 dev %.3f test %.3f, %.0f q/s | keep-pruned: dev %.3f test %.3f, %.0f q/s\n", e,
				g.Recall[2*i], g.Recall[2*i+1], g.QPS[i], k.Recall[2*i], k.Recall[2*i+1], k.QPS[i])
		}
		fmt.Printf("builds: %.1f s, keep-pruned %.1f s\n", g.Build, k.Build)
		return
	}
	if *peer == "" {
		for i, e := range ef {
			fmt.Printf("ef %d: recall@10 dev %.3f test %.3f, %.0f q/s\n", e, g.Recall[2*i], g.Recall[2*i+1], g.QPS[i])
		}
		return
	}
	f := faiss(*peer, *work, d, *m, *efc, ef, exact, ndev)
	report(*out, rows, d, *m, *efc, ef, *target, sh.Test, ndev, g, f)
}

// load makes the vectors and questions (dev first) and writes them to work
// for the peer, or with reuse reads what an earlier run wrote there.
func load(ctx context.Context, dir string, n int, work string, reuse bool) (X, Q []float32, sh shape) {
	if reuse {
		raw, err := os.ReadFile(filepath.Join(work, "shape.json"))
		if err == nil {
			err = json.Unmarshal(raw, &sh)
		}
		if err != nil || sh.Dims <= 0 {
			log.Fatalf("-reuse: %s/shape.json: %v (dims %d)", work, err, sh.Dims)
		}
		X, Q = readF32(filepath.Join(work, "x.f32")), readF32(filepath.Join(work, "q.f32"))
		if len(X)%sh.Dims != 0 || len(Q) != (sh.Dev+sh.Test)*sh.Dims {
			log.Fatalf("-reuse: %d vector and %d question values for %d dims and %d questions", len(X), len(Q), sh.Dims, sh.Dev+sh.Test)
		}
		return X, Q, sh
	}
	X, d, test, dev := vectors(ctx, dir, n)
	if err := os.MkdirAll(work, 0o755); err != nil {
		log.Fatal(err)
	}
	Q = append(slices.Clone(dev), test...)
	sh = shape{Dims: d, Dev: len(dev) / d, Test: len(test) / d}
	writeF32(filepath.Join(work, "x.f32"), X)
	writeF32(filepath.Join(work, "q.f32"), Q)
	raw, _ := json.Marshal(sh) // a struct of ints: cannot fail
	if err := os.WriteFile(filepath.Join(work, "shape.json"), raw, 0o644); err != nil {
		log.Fatal(err)
	}
	return X, Q, sh
}

// vectors returns the matrix, its width and the test and dev questions
// embedded by the index at dir.
func vectors(ctx context.Context, dir string, n int) (X []float32, d int, test, dev []float32) {
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		log.Fatal(err)
	}
	d = ix.Meta.Dims
	size := ix.N()
	if n == 0 {
		n = size
	}
	t0 := time.Now()
	c, err := synth.GenerateScale(synth.DefaultScale(n))
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("generated %d passages in %.1fs", n, time.Since(t0).Seconds())
	if n == size {
		X = ix.Vectors
	} else {
		texts := make([]string, len(c.Nodes))
		for i := range c.Nodes {
			texts[i] = index.IndexText(&c.Nodes[i])
		}
		t0 = time.Now()
		if X, err = ix.EmbedTexts(ctx, "passages", texts, progress.Nop{}); err != nil {
			log.Fatal(err)
		}
		log.Printf("embedded %d passages with the index's LSA in %.1fs", n, time.Since(t0).Seconds())
	}
	return X, d, embed(ctx, ix, c.Queries), embed(ctx, ix, c.DevQueries)
}

// embed embeds the questions; one with no known term is left out (every
// search answers it with nothing); any other error ends the run.
func embed(ctx context.Context, ix *index.Index, qs []corpus.Query) []float32 {
	var out []float32
	for _, q := range qs {
		v, err := ix.EmbedQuery(ctx, q.Text)
		switch {
		case errors.Is(err, index.ErrEmptyEmbedding):
			continue
		case err != nil:
			log.Fatalf("question %s: %v", q.ID, err)
		}
		out = append(out, v...)
	}
	return out
}

// gleaner builds the graph and answers the questions at every ef.
func gleaner(ctx context.Context, X []float32, n, d int, Q []float32, exact [][]kernels.Hit, ndev, m, efc int, efs []int) side {
	return gleanerWith(ctx, X, n, d, Q, exact, ndev, m, efc, efs, false)
}

func gleanerWith(ctx context.Context, X []float32, n, d int, Q []float32, exact [][]kernels.Hit, ndev, m, efc int, efs []int, keep bool) side {
	o := hnsw.DefaultOptions()
	o.M, o.EfConstruction, o.Workers, o.Dot, o.KeepPruned = m, efc, 2, kernels.DotRows, keep
	t0 := time.Now()
	g, err := hnsw.Build(ctx, X, n, d, o, nil)
	if err != nil {
		log.Fatal(err)
	}
	s := side{Build: time.Since(t0).Seconds()}
	log.Printf("gleaner: built in %.1fs", s.Build)
	nq := len(Q) / d
	for _, ef := range efs {
		ids := make([][]int64, nq)
		t0 := time.Now()
		for i := range nq {
			hits, err := g.Search(X, Q[i*d:(i+1)*d], k, ef, kernels.DotRows)
			if err != nil {
				log.Fatal(err)
			}
			for _, h := range hits {
				ids[i] = append(ids[i], int64(h.Index))
			}
		}
		s.QPS = append(s.QPS, float64(nq)/time.Since(t0).Seconds())
		s.IDs = append(s.IDs, ids)
	}
	s.Recall = recalls(s.IDs, exact, ndev)
	return s
}

// faiss runs the peer script on the vectors in work.
func faiss(script, work string, d, m, efc int, efs []int, exact [][]kernels.Hit, ndev int) side {
	return runPeer(exact, ndev, append([]string{script, work, strconv.Itoa(d), strconv.Itoa(m), strconv.Itoa(efc)}, itoas(efs)...)...)
}

// runPeer runs a peer script (its path and arguments) and reads the side
// it prints, its recall against exact.
func runPeer(exact [][]kernels.Hit, ndev int, args ...string) side {
	cmd := exec.Command("/usr/bin/python3", args...)
	cmd.Stderr = os.Stderr
	cmd.Env = append(os.Environ(), "OMP_WAIT_POLICY=passive")
	raw, err := cmd.Output()
	if err != nil {
		log.Fatalf("the FAISS side: %v", err)
	}
	var s side
	if err := json.Unmarshal(raw, &s); err != nil {
		log.Fatalf("the FAISS side's output: %v", err)
	}
	s.Recall = recalls(s.IDs, exact, ndev)
	if s.SQ8 != nil {
		s.SQ8.Recall = recalls(s.SQ8.IDs, exact, ndev)
	}
	log.Printf("faiss: built in %.1fs", s.Build)
	return s
}

func itoas(v []int) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = strconv.Itoa(x)
	}
	return out
}

// recalls is, per ef, the recall@10 against exact of the dev questions
// (the first ndev) and of the test ones: [dev0, test0, dev1, test1, …].
func recalls(ids [][][]int64, exact [][]kernels.Hit, ndev int) []float64 {
	var out []float64
	for _, perQ := range ids {
		var hit [2]int
		var tot [2]int
		for i, got := range perQ {
			part := 1
			if i < ndev {
				part = 0
			}
			for _, h := range exact[i] {
				tot[part]++
				if slices.Contains(got, int64(h.Index)) {
					hit[part]++
				}
			}
		}
		out = append(out, float64(hit[0])/float64(max(tot[0], 1)), float64(hit[1])/float64(max(tot[1], 1)))
	}
	return out
}

func report(path string, n, d, m, efc int, efs []int, target float64, ntest, ndev int, g, f side) {
	var b strings.Builder
	fmt.Fprintf(&b, "HNSW at %d vectors × %d dims, M %d, efConstruction %d; %d test questions (%d dev choose ef)\n\n", n, d, m, efc, ntest, ndev)
	fmt.Fprintf(&b, "Build (2 threads): gleaner %.1f s, FAISS %.1f s (%.2f×)\n\n", g.Build, f.Build, f.Build/g.Build)
	b.WriteString("| efSearch | gleaner recall@10 (dev) | gleaner recall@10 (test) | gleaner q/s | FAISS recall@10 (dev) | FAISS recall@10 (test) | FAISS q/s | q/s ratio |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, ef := range efs {
		fmt.Fprintf(&b, "| %d | %.3f | %.3f | %.0f | %.3f | %.3f | %.0f | %.2f× |\n", ef,
			g.Recall[2*i], g.Recall[2*i+1], g.QPS[i], f.Recall[2*i], f.Recall[2*i+1], f.QPS[i], g.QPS[i]/f.QPS[i])
	}
	for name, s := range map[string]side{"gleaner": g, "FAISS": f} {
		chosen := -1
		for i := range efs {
			if s.Recall[2*i] >= target {
				chosen = i
				break
			}
		}
		if chosen < 0 {
			fmt.Fprintf(&b, "\n%s: no efSearch tried reaches recall@10 %.2f on the dev questions.\n", name, target)
			continue
		}
		fmt.Fprintf(&b, "\n%s: efSearch %d is the smallest reaching %.2f on the dev questions: test recall@10 %.3f at %.0f q/s (%.3f ms per question).\n",
			name, efs[chosen], target, s.Recall[2*chosen+1], s.QPS[chosen], 1000/s.QPS[chosen])
	}
	fmt.Print(b.String())
	if path != "" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

func writeF32(path string, v []float32) {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		log.Fatal(err)
	}
}

func readF32(path string) []float32 {
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	if len(b)%4 != 0 {
		log.Fatalf("%s: %d bytes, not float32s", path, len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}
