package hnsw

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/kernels"
)

// clustered is n unit rows of d values around c centres: the shape of
// text embeddings (topics), where a graph search has to find its way.
func clustered(seed uint64, n, d, c int) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	centres := make([]float64, c*d)
	for i := range centres {
		centres[i] = rng.NormFloat64()
	}
	X := make([]float32, n*d)
	for r := range n {
		k := rng.IntN(c)
		var s float64
		row := make([]float64, d)
		for j := range row {
			row[j] = centres[k*d+j] + 0.6*rng.NormFloat64()
			s += row[j] * row[j]
		}
		for j := range row {
			X[r*d+j] = float32(row[j] / math.Sqrt(s))
		}
	}
	return X
}

func build(t *testing.T, X []float32, n, d int, o Options) *Graph {
	t.Helper()
	g, err := Build(context.Background(), X, n, d, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Check(n, d); err != nil {
		t.Fatalf("a built graph fails its check: %v", err)
	}
	return g
}

// clusteredGraph is n clustered rows (seed) and nq questions (seed+1)
// around c centres, the default graph over the rows, and each question's
// exact top k.
func clusteredGraph(t *testing.T, seed uint64, n, d, c, nq, k int) (X, Q []float32, g *Graph, exact [][]engine.Hit) {
	t.Helper()
	X, Q = clustered(seed, n, d, c), clustered(seed+1, nq, d, c)
	o := DefaultOptions()
	o.Workers, o.Dot = 2, kernels.DotRows
	g = build(t, X, n, d, o)
	exact, err := kernels.FlatIP(context.Background(), X, n, d, Q, nq, k, 1)
	if err != nil {
		t.Fatal(err)
	}
	return X, Q, g, exact
}

// TestRecallAgainstExact: on clustered data, top-10 recall against the
// exact scan at ef 64 is high, rises with ef, and every score found equals
// the scan's bit for bit.
func TestRecallAgainstExact(t *testing.T) {
	const n, d, nq, k = 4000, 24, 100, 10
	X, Q, g, exact := clusteredGraph(t, 1, n, d, 40, nq, k)
	recall := func(ef int) float64 {
		hits := 0
		for i := range nq {
			got, err := g.Search(X, Q[i*d:(i+1)*d], k, ef, kernels.DotRows)
			if err != nil {
				t.Fatal(err)
			}
			scan := map[int32]float32{}
			for _, h := range exact[i] {
				scan[h.Index] = h.Score
			}
			for _, h := range got {
				if s, ok := scan[h.Index]; ok {
					hits++
					if s != h.Score {
						t.Fatalf("query %d row %d: score %v, the scan's %v", i, h.Index, h.Score, s)
					}
				}
			}
		}
		return float64(hits) / (nq * k)
	}
	r10, r64, r400 := recall(10), recall(64), recall(400)
	t.Logf("recall@10 at ef 10, 64, 400: %.3f %.3f %.3f", r10, r64, r400)
	if r64 < 0.95 || r400 < 0.99 || r10 > r400 {
		t.Fatalf("recall@10 at ef 10, 64, 400: %.3f %.3f %.3f; want ≥ 0.95 at 64, ≥ 0.99 at 400", r10, r64, r400)
	}
}

// TestBuildIndependentOfWorkers: the same options give the same graph on
// one worker and on three.
func TestBuildIndependentOfWorkers(t *testing.T) {
	const n, d = 3000, 16
	X := clustered(3, n, d, 20)
	o := DefaultOptions()
	o.M, o.EfConstruction = 8, 40
	o.Workers = 1
	a := build(t, X, n, d, o)
	o.Workers = 3
	b := build(t, X, n, d, o)
	if a.Entry != b.Entry || !slices.Equal(a.Levels, b.Levels) || !slices.Equal(a.Layer0, b.Layer0) || !slices.Equal(a.Upper, b.Upper) {
		t.Fatal("the graph depends on the number of workers")
	}
	o.Seed = 2
	c := build(t, X, n, d, o)
	if slices.Equal(a.Layer0, c.Layer0) {
		t.Fatal("the seed changes nothing")
	}
}

// TestSmallGraphs: empty, one node, k beyond n, duplicates.
func TestSmallGraphs(t *testing.T) {
	o := DefaultOptions()
	g := build(t, nil, 0, 4, o)
	if h, err := g.Search(nil, make([]float32, 4), 5, 10, kernels.DotRows); err != nil || h != nil {
		t.Fatalf("empty graph: %v %v", h, err)
	}
	one := []float32{1, 0, 0, 0}
	g = build(t, one, 1, 4, o)
	if h, err := g.Search(one, one, 5, 10, kernels.DotRows); err != nil || len(h) != 1 || h[0].Index != 0 {
		t.Fatalf("one node: %v %v", h, err)
	}
	dup := make([]float32, 0, 40*4)
	for range 40 {
		dup = append(dup, 0.5, 0.5, 0.5, 0.5)
	}
	g = build(t, dup, 40, 4, o)
	// Equal rows crowd each other out of full link lists (as in every
	// HNSW), so only the first k are asked for: ties go to the lower row.
	h, err := g.Search(dup, dup[:4], 10, 100, kernels.DotRows)
	if err != nil || len(h) != 10 {
		t.Fatalf("40 equal rows, k 10: %d hits, %v", len(h), err)
	}
	for i, x := range h {
		if x.Index != int32(i) {
			t.Fatalf("equal scores not in row order: %v", h)
		}
	}
}

func TestOptionsAndSearchRefused(t *testing.T) {
	X := clustered(4, 50, 8, 3)
	bad := []Options{{M: 1, EfConstruction: 10, Workers: 1}, {M: 16, EfConstruction: 0, Workers: 1},
		{M: 16, EfConstruction: 10, Workers: 0}, {M: MaxM + 1, EfConstruction: 10, Workers: 1}}
	for _, o := range bad {
		if _, err := Build(context.Background(), X, 50, 8, o, nil); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	if _, err := Build(context.Background(), X, 51, 8, DefaultOptions(), nil); err == nil {
		t.Error("a matrix of the wrong size accepted")
	}
	g := build(t, X, 50, 8, DefaultOptions())
	for _, c := range []struct {
		q  []float32
		ef int
	}{{make([]float32, 7), 10}, {X[:8], 0}, {X[:8], MaxEf + 1}} {
		if _, err := g.Search(X, c.q, 5, c.ef, kernels.DotRows); err == nil {
			t.Errorf("search with %d values at ef %d accepted", len(c.q), c.ef)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, X, 50, 8, DefaultOptions(), nil); err == nil {
		t.Error("a cancelled build finished")
	}
}

// TestCheckRefusesDamage: each kind of damage a stored graph can have is
// caught before a search could follow it.
func TestCheckRefusesDamage(t *testing.T) {
	const n, d = 600, 8
	X := clustered(5, n, d, 6)
	o := DefaultOptions()
	o.M = 4
	fresh := func() *Graph { return build(t, X, n, d, o) }
	upperNode := func(g *Graph) int32 {
		for v, l := range g.Levels {
			if l > 0 && int32(v) != g.Entry {
				return int32(v)
			}
		}
		t.Fatal("no upper-layer node")
		return -1
	}
	cases := map[string]func(g *Graph){
		"link out of range": func(g *Graph) { g.Layer0[3] = n },
		"link after the end": func(g *Graph) {
			for v := range int32(n) {
				if s := g.links(v, 0); count(s) < len(s)-1 {
					s[len(s)-1] = 2
					return
				}
			}
		},
		"link off its layer": func(g *Graph) {
			v := upperNode(g)
			for u, l := range g.Levels {
				if l == 0 {
					g.links(v, 1)[0] = int32(u)
					return
				}
			}
		},
		"entry off the top":   func(g *Graph) { g.Entry = int32(slices.Index(g.Levels, 0)) },
		"entry out of range":  func(g *Graph) { g.Entry = n },
		"short layer 0":       func(g *Graph) { g.Layer0 = g.Layer0[:len(g.Layer0)-1] },
		"offsets disagree":    func(g *Graph) { g.Levels[upperNode(g)]++ },
		"upper slots missing": func(g *Graph) { g.Upper = g.Upper[:len(g.Upper)-1] },
	}
	for name, damage := range cases {
		g := fresh()
		damage(g)
		if err := g.Check(n, d); err == nil {
			t.Errorf("%s: passed the check", name)
		} else if !strings.HasPrefix(err.Error(), "hnsw: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := fresh().Check(n+1, d); err == nil {
		t.Error("a graph over another matrix passed")
	}
}

// TestConcurrentSearch: searches sharing one graph (and its pooled
// workspaces) answer as they do one at a time (run under -race).
func TestConcurrentSearch(t *testing.T) {
	const n, d, nq = 1500, 16, 64
	X := clustered(6, n, d, 12)
	Q := clustered(7, nq, d, 12)
	g := build(t, X, n, d, DefaultOptions())
	want := make([][]engine.Hit, nq)
	for i := range nq {
		want[i], _ = g.Search(X, Q[i*d:(i+1)*d], 10, 32, kernels.DotRows)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4*nq)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range nq {
				j := (i + w*17) % nq
				got, err := g.Search(X, Q[j*d:(j+1)*d], 10, 32, kernels.DotRows)
				if err != nil || !slices.Equal(got, want[j]) {
					errs <- fmt.Sprintf("query %d: %v (%v), alone %v", j, got, err, want[j])
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// TestKeepPruned: filling the free slots gives a valid graph, the same on
// any number of workers, with more links and no lower recall.
func TestKeepPruned(t *testing.T) {
	const n, d, nq = 3000, 16, 60
	X := clustered(8, n, d, 30)
	Q := clustered(9, nq, d, 30)
	o := DefaultOptions()
	o.M, o.EfConstruction, o.Workers = 8, 60, 1
	plain := build(t, X, n, d, o)
	o.KeepPruned = true
	keep := build(t, X, n, d, o)
	o.Workers = 3
	if again := build(t, X, n, d, o); !slices.Equal(again.Layer0, keep.Layer0) {
		t.Fatal("keep-pruned graph depends on the number of workers")
	}
	links := func(g *Graph) (c int) {
		for v := range int32(n) {
			c += count(g.links(v, 0))
		}
		return c
	}
	exact, err := kernels.FlatIP(context.Background(), X, n, d, Q, nq, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	recall := func(g *Graph) float64 { return recallAt(t, g, X, Q, exact, 12) }
	lp, lk, rp, rk := links(plain), links(keep), recall(plain), recall(keep)
	t.Logf("layer-0 links %d → %d, recall@10 at ef 12 %.3f → %.3f", lp, lk, rp, rk)
	if lk <= lp || rk < rp {
		t.Fatalf("keep-pruned: links %d → %d, recall %.3f → %.3f", lp, lk, rp, rk)
	}
}

// TestSearchFrom: a walk from given rows finds the exact top k from the
// scan's own answer, from far rows at an ef of every node, and from a few
// random rows about as well as Search; rank for rank it never scores below
// its start rows; no rows is Search, and a row out of range is refused.
func TestSearchFrom(t *testing.T) {
	const n, d, nq, k = 3000, 16, 60, 10
	X, Q, g, exact := clusteredGraph(t, 11, n, d, 30, nq, k)
	rng := rand.New(rand.NewPCG(13, 1))
	found := 0
	for i := range nq {
		q := Q[i*d : (i+1)*d]
		ids := make([]int32, k)
		for j, h := range exact[i] {
			ids[j] = h.Index
		}
		same(t, fmt.Sprintf("query %d from the scan's answer", i), from(t, g, X, q, ids, k, 10), exact[i])
		same(t, fmt.Sprintf("query %d from row 0 at ef %d", i, n), from(t, g, X, q, []int32{0}, k, n), exact[i])
		start := []int32{rng.Int32N(n), rng.Int32N(n), rng.Int32N(n), 7, 7}
		got := from(t, g, X, q, start, k, 64)
		sims := make([]float32, len(start))
		kernels.DotRows(X, d, start, q, sims)
		slices.SortFunc(sims, func(a, b float32) int { return cmp.Compare(b, a) })
		for r := range min(len(sims), len(got)) {
			if got[r].Score < sims[r] {
				t.Fatalf("query %d: hit %d scores %v, below start row %d's %v", i, r, got[r].Score, r, sims[r])
			}
		}
		for _, h := range got {
			if slices.ContainsFunc(exact[i], func(e engine.Hit) bool { return e.Index == h.Index }) {
				found++
			}
		}
		plain, err := g.Search(X, q, k, 64, kernels.DotRows)
		if err != nil {
			t.Fatal(err)
		}
		same(t, fmt.Sprintf("query %d from no rows", i), from(t, g, X, q, nil, k, 64), plain)
	}
	r := float64(found) / (nq * k)
	t.Logf("recall@10 from random rows at ef 64: %.3f", r)
	if r < 0.95 {
		t.Fatalf("recall@10 from random rows at ef 64: %.3f, want ≥ 0.95", r)
	}
	for _, bad := range [][]int32{{-1}, {0, n}} {
		if _, err := g.SearchFrom(X, Q[:d], bad, k, 64, kernels.DotRows); err == nil {
			t.Errorf("start rows %v accepted", bad)
		}
	}
	if _, err := g.SearchFrom(X, Q[:d], []int32{0}, k, MaxEf+1, kernels.DotRows); err == nil {
		t.Error("ef past MaxEf accepted")
	}
}

func from(t *testing.T, g *Graph, X, q []float32, start []int32, k, ef int) []engine.Hit {
	t.Helper()
	h, err := g.SearchFrom(X, q, start, k, ef, kernels.DotRows)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func same(t *testing.T, what string, got, want []engine.Hit) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
}

// TestSearchCodes: a build whose searches score int8 codes chooses links
// on exact scores, so where its searches find every node (efConstruction
// ≥ n) it builds the float32 build's graph; at a usual efConstruction its
// graph is as good, and it depends on neither the workers nor anything
// but the rows. A row that is not finite is refused either way.
func TestSearchCodes(t *testing.T) {
	const d = 16
	withCodes := func(o Options) Options {
		o.SearchCodes, o.CodeDot = true, kernels.ScoreCodeRows
		return o
	}
	o := DefaultOptions()
	o.Dot, o.Workers = kernels.DotRows, 1
	X := clustered(11, 400, d, 8)
	o.M, o.EfConstruction = 4, 400
	plain, coded := build(t, X, 400, d, o), build(t, X, 400, d, withCodes(o))
	portable := withCodes(o)
	portable.CodeDot = nil // GoCodeDot
	for _, g := range []*Graph{coded, build(t, X, 400, d, portable)} {
		if !slices.Equal(plain.Layer0, g.Layer0) || !slices.Equal(plain.Upper, g.Upper) || plain.Entry != g.Entry {
			t.Fatal("searches finding every node on codes built another graph than on the rows")
		}
	}

	const n, nq = 3000, 60
	X, Q := clustered(12, n, d, 30), clustered(13, nq, d, 30)
	o.M, o.EfConstruction = 8, 60
	plain, coded = build(t, X, n, d, o), build(t, X, n, d, withCodes(o))
	o.Workers = 3
	if again := build(t, X, n, d, withCodes(o)); !slices.Equal(again.Layer0, coded.Layer0) || !slices.Equal(again.Upper, coded.Upper) {
		t.Fatal("a build on codes depends on the number of workers")
	}
	if slices.Equal(plain.Layer0, coded.Layer0) {
		t.Fatal("codes changed no link: the test cannot tell them apart")
	}
	exact, err := kernels.FlatIP(context.Background(), X, n, d, Q, nq, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	recall := func(g *Graph) float64 { return recallAt(t, g, X, Q, exact, 12) }
	rp, rc := recall(plain), recall(coded)
	t.Logf("recall@10 at ef 12: rows %.3f, codes %.3f", rp, rc)
	if rc < rp-0.02 {
		t.Fatalf("recall@10 at ef 12: %.3f on a graph built on codes, %.3f on rows", rc, rp)
	}

	X[5*d+3] = float32(math.NaN())
	for _, o := range []Options{o, withCodes(o)} {
		if _, err := Build(context.Background(), X, n, d, o, nil); err == nil || !strings.Contains(err.Error(), "row 5 value 3") {
			t.Fatalf("a NaN row, codes %v: %v", o.SearchCodes, err)
		}
	}
}

// recallAt is the share of each question's exact hits (exact[i], for the
// rows of Q) that g's search at ef finds with their scores, as many deep.
func recallAt(t *testing.T, g *Graph, X, Q []float32, exact [][]engine.Hit, ef int) float64 {
	t.Helper()
	hit, total := 0, 0
	for i, want := range exact {
		got, err := g.Search(X, Q[i*g.Dims:(i+1)*g.Dims], len(want), ef, kernels.DotRows)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range got {
			if slices.Contains(want, h) {
				hit++
			}
		}
		total += len(want)
	}
	return float64(hit) / float64(max(total, 1))
}

// TestVisitStampsWrap: a node visited 2¹⁶ − 1 searches ago, when the
// epoch comes round to the same value again, is not taken as visited.
func TestVisitStampsWrap(t *testing.T) {
	w := newWorkspace(4, 2)
	w.begin()
	if !w.visit(2) || w.visit(2) {
		t.Fatal("a first visit is not new, or a second one is")
	}
	first := w.epoch
	for range 1<<16 - 1 {
		w.begin()
	}
	if w.epoch != first {
		t.Fatalf("epoch %d after a full turn, want %d again", w.epoch, first)
	}
	if !w.visit(2) {
		t.Fatal("a stamp from a full turn of the epoch ago reads as visited")
	}
}
