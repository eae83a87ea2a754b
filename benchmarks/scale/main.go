// Command scale measures how gleaner grows with the corpus (issue: scale).
// For each size it generates the seeded scale corpus (corpus/synth,
// GenerateScale: 100-word entity passages with mentions edges and
// three-hop questions), indexes it with the gleaner binary in a child
// process (wall time and the child's peak RSS), builds its HNSW graph and
// its inverted file the same way (gleaner graph build --kind hnsw, --kind
// ivf), weighs the index on disk, opens it in this process (the open
// time), and asks each method every test question once (p50, p99,
// Recall@10): vector (search auto: the walk from the file's answer where
// the file pays) and vector?search=hnsw, the walk from the top;
// hybrid on the graph; vector?search=ivf and hybrid?hybrid-search=ivf on
// the file; and vector?search=exact and hybrid?hybrid-search=exact
// scanning every vector, with the top-10 overlap of each walk or probe
// with its scan. Last,
// with the methods measured, it times the mentions graph build (gleaner
// graph build --kind mentions), and up to -knn-upto passages the kNN
// graph's (--kind knn, with its default --lex-budget: about 7 minutes of
// lexical neighbours at 10⁶, benchmarks/knn); both rewrite the index's
// graph. It ends with each method's
// growth exponent, the least-squares slope of log p50 over log N (1:
// linear in the corpus; 0: independent of it), the build's, and a log–log
// plot of p50 against N.
//
// The dev questions (queries-dev.jsonl) are asked once, through the first
// method, to warm the index's shared caches; they are not measured. The
// figures are over the test questions.
//
//	bash benchmarks/scale/run.sh            # N = 10⁴ and 10⁵
//	go run ./benchmarks/scale -gleaner bin/gleaner -n 10000,100000,1000000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gleaner-rag/gleaner/benchmarks/internal/methodspec"
	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/eval"
	"github.com/gleaner-rag/gleaner/index"
	_ "github.com/gleaner-rag/gleaner/kernels/cpu"
	_ "github.com/gleaner-rag/gleaner/methods"
	"github.com/gleaner-rag/gleaner/models/lexical"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func main() {
	sizes := flag.String("n", "10000,100000", "corpus sizes in passages, comma-separated")
	bin := flag.String("gleaner", "bin/gleaner", "the gleaner binary that builds the indexes")
	methods := flag.String("methods", "bm25,vector,vector?search=hnsw,vector?search=ivf,vector?search=exact,hybrid,hybrid?hybrid-search=ivf,hybrid?hybrid-search=exact,ppr,re2,gar,fastinsight,fuserag", "methods measured (name or name?setting=value&…)")
	work := flag.String("work", "/tmp/gleaner-scale", "folder for the corpora and indexes (each run replaces them)")
	out := flag.String("out", "", "folder for table.md and p50.svg (default: print the table only)")
	knnUpTo := flag.Int("knn-upto", 1_000_000, "time the kNN graph build up to this many passages")
	flag.Parse()
	ns, err := parseSizes(*sizes)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := os.Stat(*bin); err != nil {
		log.Fatalf("scale: the gleaner binary: %v (make build makes bin/gleaner)", err)
	}
	be, err := engine.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	var rows []sizeRow
	for _, n := range ns {
		r, err := measureSize(*work, *bin, n, strings.Split(*methods, ","), be, n <= *knnUpTo)
		if err != nil {
			log.Fatalf("scale: N=%d: %v", n, err)
		}
		rows = append(rows, r)
		fmt.Fprintln(os.Stderr, r.summary())
	}
	var b strings.Builder
	writeTables(&b, rows)
	fmt.Print(b.String())
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*out, "table.md"), []byte(b.String()), 0o644); err != nil {
			log.Fatal(err)
		}
		if len(rows) > 1 {
			if err := plotP50(filepath.Join(*out, "p50.svg"), rows); err != nil {
				log.Fatal(err)
			}
		}
	}
}

func parseSizes(s string) ([]int, error) {
	var ns []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1000 || n > 10_000_000 {
			return nil, fmt.Errorf("scale: -n: %q is not a size in [1000, 1e7]", f)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// sizeRow is what one corpus size measured.
type sizeRow struct {
	n                int
	gen, build, open time.Duration
	graph            time.Duration // gleaner graph build --kind hnsw
	file             time.Duration // gleaner graph build --kind ivf
	fileRSS          int64
	mentions, knn    time.Duration // gleaner graph build --kind mentions, --kind knn
	mentionsRSS      int64
	knnRSS           int64
	buildRSS, disk   int64 // bytes
	graphRSS         int64
	pruning          []pruning
	edges            int
	methods          []methodRow
}

type methodRow struct {
	name     string
	p50, p99 float64 // ms
	recall   float64
	tops     [][]int32 // each test question's top 10
}

func (r sizeRow) summary() string {
	return fmt.Sprintf("N=%d: generated in %v, indexed in %v (peak RSS %.0f MiB), %.0f MiB on disk, opened in %v",
		r.n, r.gen.Round(time.Millisecond), r.build.Round(time.Second), mib(r.buildRSS), mib(r.disk), r.open.Round(time.Millisecond))
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// measureSize generates, indexes, opens and queries the corpus of n
// passages.
func measureSize(work, bin string, n int, names []string, be engine.Backend, knn bool) (sizeRow, error) {
	r := sizeRow{n: n}
	cdir := filepath.Join(work, fmt.Sprintf("corpus-%d", n))
	idir := filepath.Join(work, fmt.Sprintf("index-%d", n))
	start := time.Now()
	c, err := synth.GenerateScale(synth.DefaultScale(n))
	if err != nil {
		return r, err
	}
	r.gen = time.Since(start)
	r.edges = len(c.Edges)
	if err := corpus.Write(cdir, c); err != nil {
		return r, err
	}
	if r.build, r.buildRSS, err = run(bin, "index", cdir, "-o", idir, "--log-level", "warn"); err != nil {
		return r, err
	}
	if r.graph, r.graphRSS, err = run(bin, "graph", "build", "--kind", "hnsw", "--index", idir, "--log-level", "warn"); err != nil {
		return r, err
	}
	if r.file, r.fileRSS, err = run(bin, "graph", "build", "--kind", "ivf", "--index", idir, "--log-level", "warn"); err != nil {
		return r, err
	}
	if r.disk, err = folderSize(idir); err != nil {
		return r, err
	}
	start = time.Now()
	ix, err := index.Open(idir, store.OpenOptions{})
	if err != nil {
		return r, err
	}
	r.open = time.Since(start)
	defer ix.Close()
	for _, name := range names {
		m, err := newMethod(ix, be, name)
		if err != nil {
			return r, err
		}
		mr, err := measureMethod(ix, m, c.DevQueries, c.Queries)
		retrieve.CloseAll(context.Background(), m)
		if err != nil {
			return r, fmt.Errorf("%s: %w", name, err)
		}
		r.methods = append(r.methods, mr)
		c.DevQueries = nil // warm once: the index's caches are shared
	}
	r.pruning = measurePruning(ix, c.Queries)
	if r.mentions, r.mentionsRSS, err = run(bin, "graph", "build", "--kind", "mentions", "--index", idir, "--log-level", "warn"); err != nil {
		return r, err
	}
	if !knn {
		return r, nil
	}
	if r.knn, r.knnRSS, err = run(bin, "graph", "build", "--kind", "knn", "--index", idir, "--log-level", "warn"); err != nil {
		return r, err
	}
	return r, nil
}

// newMethod makes the method named by spec: a method name, or
// name?setting=value&… ("vector?search=exact").
func newMethod(ix *index.Index, be engine.Backend, spec string) (retrieve.Method, error) {
	cfg, err := methodspec.Config(spec)
	if err != nil {
		return nil, err
	}
	m, err := retrieve.New(ix, retrieve.Env{Backend: be}, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	return named{m, spec}, nil
}

// named reports a method under its spec.
type named struct {
	retrieve.Method
	spec string
}

func (m named) Name() string { return m.spec }

// run runs the gleaner binary with args, returning the wall time and the
// child's peak resident set.
func run(bin string, args ...string) (time.Duration, int64, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("gleaner %s: %w", args[0], err)
	}
	wall := time.Since(start)
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return wall, 0, errors.New("no resource usage for the build")
	}
	return wall, ru.Maxrss * 1024, nil // Linux reports kilobytes
}

func folderSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			total += info.Size()
		}
		return err
	})
	return total, err
}

// measureMethod warms m with the dev questions, then times each test
// question once at k = 10.
func measureMethod(ix *index.Index, m retrieve.Method, dev, test []corpus.Query) (methodRow, error) {
	ctx := context.Background()
	for _, q := range dev {
		if _, err := m.Retrieve(ctx, retrieve.Query{Text: q.Text}, 10); err != nil {
			return methodRow{}, err
		}
	}
	ms := make([]float64, 0, len(test))
	var recall float64
	var tops [][]int32
	for _, q := range test {
		start := time.Now()
		hits, err := m.Retrieve(ctx, retrieve.Query{Text: q.Text}, 10)
		if err != nil {
			return methodRow{}, err
		}
		ms = append(ms, float64(time.Since(start).Nanoseconds())/1e6)
		ids, top := make([]string, len(hits)), make([]int32, len(hits))
		for j, h := range hits {
			ids[j], top[j] = ix.NodeID(int(h.Index)), h.Index
		}
		tops = append(tops, top)
		sc, ok := eval.Score(ids, q.Judgements(), []int{10})
		if !ok {
			return methodRow{}, fmt.Errorf("question %s has no gold passage", q.ID)
		}
		recall += sc[eval.Name(eval.Recall, 10)]
	}
	slices.Sort(ms)
	return methodRow{name: m.Name(), p50: pct(ms, 0.5), p99: pct(ms, 0.99), recall: recall / float64(len(test)), tops: tops}, nil
}

// pruning compares BM25's search (MaxScore where it pays) with scoring
// every match, on the same analysed queries in one run.
type pruning struct {
	queries            string
	search, exhaustive float64 // p50 ms at k = 10
}

// measurePruning times both searches on the test questions and on
// keyword queries: the last 12 terms of 300 passages spread over the
// index, the long many-term queries that pruning is for.
func measurePruning(ix *index.Index, test []corpus.Query) []pruning {
	var qs, kw [][]string
	for _, q := range test {
		qs = append(qs, lexical.Analyze(q.Text))
	}
	for i := range 300 {
		t := lexical.Analyze(ix.Text(i * ix.N() / 300))
		kw = append(kw, t[max(0, len(t)-12):])
	}
	return []pruning{timeBoth(ix, "questions", qs), timeBoth(ix, "12 passage terms", kw)}
}

func timeBoth(ix *index.Index, name string, qs [][]string) pruning {
	var a, b []float64
	for _, t := range qs {
		start := time.Now()
		ix.BM25.SearchTerms(t, 10)
		a = append(a, float64(time.Since(start).Nanoseconds())/1e6)
		start = time.Now()
		ix.BM25.SearchExhaustive(t, 10)
		b = append(b, float64(time.Since(start).Nanoseconds())/1e6)
	}
	slices.Sort(a)
	slices.Sort(b)
	return pruning{queries: name, search: pct(a, 0.5), exhaustive: pct(b, 0.5)}
}

// exactTwins pairs a method on the HNSW graph or the inverted file with
// its scan.
var exactTwins = map[string]string{"vector": "vector?search=exact", "hybrid": "hybrid?hybrid-search=exact",
	"vector?search=ivf": "vector?search=exact", "hybrid?hybrid-search=ivf": "hybrid?hybrid-search=exact",
	"vector?search=hnsw": "vector?search=exact", "vector?search=seeded": "vector?search=exact"}

// writeOverlaps tables, per size, the mean share of each scan's top 10
// that its walk or probe also returns.
func writeOverlaps(w io.Writer, rows []sizeRow) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| N passages | method (walk or probe) | top-10 overlap with its scan |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, r := range rows {
		byName := map[string]methodRow{}
		for _, m := range r.methods {
			byName[m.name] = m
		}
		for _, m := range r.methods {
			scan, ok := byName[exactTwins[m.name]]
			if !ok {
				continue
			}
			fmt.Fprintf(w, "| %d | %s | %.3f |\n", r.n, m.name, meanOverlap(m.tops, scan.tops))
		}
	}
}

// meanOverlap is the mean over questions of |a ∩ b| / |b| (1 when b is
// empty).
func meanOverlap(a, b [][]int32) float64 {
	var sum float64
	for i := range b {
		if len(b[i]) == 0 {
			sum++
			continue
		}
		n := 0
		for _, v := range a[i] {
			if slices.Contains(b[i], v) {
				n++
			}
		}
		sum += float64(n) / float64(len(b[i]))
	}
	return sum / float64(max(len(b), 1))
}

// pct is the q-quantile of sorted values (nearest rank).
func pct(sorted []float64, q float64) float64 {
	return sorted[min(len(sorted)-1, int(math.Ceil(q*float64(len(sorted))))-1)]
}

// slope is the least-squares slope of log y over log x.
func slope(xs, ys []float64) float64 {
	var sx, sy, sxx, sxy float64
	for i := range xs {
		x, y := math.Log(xs[i]), math.Log(ys[i])
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	n := float64(len(xs))
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

func writeTables(w io.Writer, rows []sizeRow) {
	fmt.Fprintln(w, "| N passages | edges | generate | index (BM25 + LSA + head) | peak RSS | HNSW graph | its peak RSS | inverted file | its peak RSS | mentions graph | its peak RSS | kNN graph | its peak RSS | on disk | open |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		knn := "— | —" // not timed (-knn-upto)
		if r.knn > 0 {
			knn = fmt.Sprintf("%.1f s | %.0f MiB", r.knn.Seconds(), mib(r.knnRSS))
		}
		fmt.Fprintf(w, "| %d | %d | %.1f s | %.1f s | %.0f MiB | %.1f s | %.0f MiB | %.1f s | %.0f MiB | %.1f s | %.0f MiB | %s | %.0f MiB | %.0f ms |\n", r.n, r.edges, r.gen.Seconds(), r.build.Seconds(),
			mib(r.buildRSS), r.graph.Seconds(), mib(r.graphRSS), r.file.Seconds(), mib(r.fileRSS), r.mentions.Seconds(), mib(r.mentionsRSS), knn,
			mib(r.disk), float64(r.open.Microseconds())/1000)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| N passages | method | Recall@10 | p50 ms | p99 ms |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, r := range rows {
		for _, m := range r.methods {
			fmt.Fprintf(w, "| %d | %s | %.3f | %.2f | %.2f |\n", r.n, m.name, m.recall, m.p50, m.p99)
		}
	}
	writeOverlaps(w, rows)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| N passages | BM25 queries | p50, every match scored | p50, SearchTerms (MaxScore where it pays) | ratio |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, r := range rows {
		for _, p := range r.pruning {
			fmt.Fprintf(w, "| %d | %s | %.3f ms | %.3f ms | %.1f× |\n", r.n, p.queries, p.exhaustive, p.search, p.exhaustive/p.search)
		}
	}
	if len(rows) < 2 {
		return
	}
	xs := make([]float64, len(rows))
	builds, graphs, files := make([]float64, len(rows)), make([]float64, len(rows)), make([]float64, len(rows))
	for i, r := range rows {
		xs[i], builds[i], graphs[i], files[i] = float64(r.n), r.build.Seconds(), r.graph.Seconds(), r.file.Seconds()
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| growth exponent (slope of log time over log N) | value |")
	fmt.Fprintln(w, "|---|---|")
	fmt.Fprintf(w, "| index build | %.2f |\n", slope(xs, builds))
	fmt.Fprintf(w, "| HNSW graph build | %.2f |\n", slope(xs, graphs))
	fmt.Fprintf(w, "| inverted file build | %.2f |\n", slope(xs, files))
	mentions := make([]float64, len(rows))
	for i, r := range rows {
		mentions[i] = r.mentions.Seconds()
	}
	fmt.Fprintf(w, "| mentions graph build | %.2f |\n", slope(xs, mentions))
	for j, m := range rows[0].methods {
		ys := make([]float64, len(rows))
		for i, r := range rows {
			ys[i] = r.methods[j].p50
		}
		fmt.Fprintf(w, "| %s p50 | %.2f |\n", m.name, slope(xs, ys))
	}
}
