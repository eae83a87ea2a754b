package retrieve_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models/lexical"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// annIndex builds a small index with its HNSW graph (built by the build
// step, as `gleaner graph build --kind hnsw` does) in a folder of its own.
func annIndex(t *testing.T, settings ...[2]string) (string, []retrieve.Query) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ix")
	c, err := synth.GenerateScale(synth.DefaultScale(800))
	if err != nil {
		t.Fatal(err)
	}
	lsa := lexical.DefaultLSA()
	lsa.Dims = 32
	if err := index.Build(context.Background(), c, dir, index.WithLSA(lsa), index.WithoutHead()); err != nil {
		t.Fatal(err)
	}
	cfg, err := retrieve.NewBuildConfig(retrieve.SectionHNSW)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range settings {
		if err := cfg.Set(s[0], s[1]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := retrieve.Build(context.Background(), retrieve.BuildEnv{}, dir, cfg); err != nil {
		t.Fatal(err)
	}
	var qs []retrieve.Query
	for _, q := range c.Queries[:60] {
		qs = append(qs, retrieve.Query{ID: q.ID, Text: q.Text})
	}
	return dir, qs
}

// openANNIndex opens annIndex's index built on two workers, closed when
// the test ends.
func openANNIndex(t *testing.T) (*index.Index, []retrieve.Query) {
	t.Helper()
	dir, qs := annIndex(t, [2]string{"workers", "2"})
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix, qs
}

func vectorWith(t *testing.T, ix *index.Index, settings ...string) retrieve.Method {
	t.Helper()
	cfg, err := retrieve.NewConfig("vector")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(settings); i += 2 {
		if err := cfg.Set(settings[i], settings[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	m, err := retrieve.New(ix, env(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestVectorOnHNSW: with the graph built, search hnsw walks it; an ef as
// large as the index finds exactly the exact search's hits and scores; a
// small ef finds most of them; search auto on an index this small scans.
func TestVectorOnHNSW(t *testing.T) {
	ix, qs := openANNIndex(t)
	exact := vectorWith(t, ix, "search", "exact")
	full := vectorWith(t, ix, "search", "hnsw", "ef", "800")
	small := vectorWith(t, ix, "search", "hnsw", "ef", "24")
	auto := vectorWith(t, ix)
	found, total := 0, 0
	for _, q := range qs {
		want, err := exact.Retrieve(context.Background(), q, 10)
		if err != nil {
			t.Fatal(err)
		}
		got, err := full.Retrieve(context.Background(), q, 10)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("query %s: ef = N gives %v, exact %v", q.ID, got, want)
		}
		if scan, err := auto.Retrieve(context.Background(), q, 10); err != nil || !slices.Equal(scan, want) {
			t.Fatalf("query %s: auto on %d nodes gives %v (%v), exact %v", q.ID, ix.N(), scan, err, want)
		}
		approx, err := small.Retrieve(context.Background(), q, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range approx {
			total++
			if slices.Contains(want, h) {
				found++
			}
		}
	}
	r := float64(found) / float64(total)
	t.Logf("ef 24 finds %.3f of the exact top 10", r)
	if r < 0.9 || r == 1 {
		t.Fatalf("ef 24 finds %.3f of the exact top 10, want [0.9, 1): a walk, and a good one", r)
	}
}

// TestVectorWithoutHNSW: search auto falls back to exact only when no
// graph was built; search hnsw says how to build one; a damaged graph is
// never passed over silently.
func TestVectorWithoutHNSW(t *testing.T) {
	ix, _ := openIndex(t)
	cfg, _ := retrieve.NewConfig("vector")
	if _, err := retrieve.New(ix, env(), cfg); err != nil {
		t.Fatalf("auto without a graph: %v", err)
	}
	if err := cfg.Set("search", "hnsw"); err != nil {
		t.Fatal(err)
	}
	_, err := retrieve.New(ix, env(), cfg)
	if !errors.Is(err, index.ErrNotBuilt) {
		t.Fatalf("hnsw without a graph: %v", err)
	}
	for _, bad := range [][2]string{{"search", "fast"}, {"ef", "0"}, {"ef", "1000000"}} {
		c, _ := retrieve.NewConfig("vector")
		if err := c.Set(bad[0], bad[1]); err == nil {
			if err := c.Validate(); err == nil {
				t.Errorf("%s %s accepted", bad[0], bad[1])
			}
		}
	}

	dir, _ := annIndex(t, [2]string{"m", "4"})
	ix2, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := retrieve.HNSWOf(ix2)
	if err != nil {
		t.Fatal(err)
	}
	// A layer-0 link that leaves the graph, stored with a valid checksum,
	// gets past the store and must be caught by the section's check.
	layer0 := slices.Clone(g.Layer0)
	layer0[0] = int32(g.N)
	meta := map[string]any{"m": g.M, "ef_construction": 200, "seed": 1, "nodes": g.N, "dims": g.Dims, "entry": g.Entry}
	err = index.SetSection(context.Background(), dir, retrieve.SectionHNSW, meta, func(w *index.SectionWriter) error {
		return errors.Join(w.Bytes("levels.bytes", slices.Clone(g.Levels)), w.I32("layer0.i32", layer0),
			w.I32("upper.i32", slices.Clone(g.Upper)), w.I64("upper_off.i64", slices.Clone(g.UpperOff)))
	})
	ix2.Close()
	if err != nil {
		t.Fatal(err)
	}
	ix3, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix3.Close()
	c, _ := retrieve.NewConfig("vector")
	if _, err := retrieve.New(ix3, env(), c); err == nil || errors.Is(err, index.ErrNotBuilt) {
		t.Fatalf("auto over a damaged graph: %v", err)
	}
}

// TestKNNOnHNSW: the knn build step finds the semantic neighbours on the
// graph (search hnsw; auto only from 10⁵ nodes); at an ef as large as the
// index they are exact search's.
func TestKNNOnHNSW(t *testing.T) {
	dir, _ := annIndex(t)
	views := map[string]any{}
	for _, search := range []string{"exact", "hnsw"} {
		cfg, err := retrieve.NewBuildConfig("knn")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range [][2]string{{"k-lex", "0"}, {"k-sem", "3"}, {"search", search}, {"ef", "800"}} {
			if err := cfg.Set(s[0], s[1]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := retrieve.Build(context.Background(), retrieve.BuildEnv{Backend: env().Backend}, dir, cfg); err != nil {
			t.Fatal(err)
		}
		ix, err := index.Open(dir, store.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		views[search] = ix.View("knn")
		ix.Close()
	}
	if !reflect.DeepEqual(views["exact"], views["hnsw"]) {
		t.Fatal("knn on the graph at ef = N differs from exact")
	}
}

func hybridStage(t *testing.T, ix *index.Index, fusion, search string, ef int, weight ...float64) *retrieve.Stage {
	t.Helper()
	o := retrieve.DefaultStage()
	o.Kind, o.Hybrid.Fusion, o.Hybrid.Search, o.Hybrid.Ef = retrieve.StageHybrid, fusion, search, ef
	if len(weight) > 0 {
		o.Hybrid.Weight = weight[0]
	}
	return newStage(t, ix, o)
}

// hybridOnIVF is the hybrid stage over the inverted file (search ivf, or
// auto) with a dense list of ef and nprobe lists probed.
func hybridOnIVF(t *testing.T, ix *index.Index, fusion, search string, ef, nprobe int) *retrieve.Stage {
	t.Helper()
	o := retrieve.DefaultStage()
	o.Kind, o.Hybrid.Fusion, o.Hybrid.Search, o.Hybrid.Ef, o.Hybrid.Nprobe = retrieve.StageHybrid, fusion, search, ef, nprobe
	return newStage(t, ix, o)
}

func newStage(t *testing.T, ix *index.Index, o retrieve.StageOptions) *retrieve.Stage {
	t.Helper()
	st, err := retrieve.NewStage(ix, env().Backend, o)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestHybridOnHNSW: over the graph, the hybrid stage's Run fuses BM25's
// top list with the walk's. A walk as long as the index makes that
// exactly the scan's ranking, under both fusions. With a short walk,
// whenever the walks find the exact top list and the exact least similar
// node, the fusion must again equal the scan's ranking: what the lists
// leave out is bounded, and BM25's list grows until that bound is beaten.
func TestHybridOnHNSW(t *testing.T) {
	ix, qs := openANNIndex(t)
	exactVec := vectorWith(t, ix, "search", "exact")
	walk, lowWalk := vectorWith(t, ix, "search", "hnsw", "ef", "24"), vectorWith(t, ix, "search", "hnsw", "ef", "3") // the range's end: ef/8
	qs = append(qs, retrieve.Query{Text: "no such words zzqx"})
	for _, fusion := range []string{retrieve.FusionConvex, retrieve.FusionRRF} {
		scan, full := hybridStage(t, ix, fusion, retrieve.SearchExact, 24), hybridStage(t, ix, fusion, retrieve.SearchHNSW, 800)
		checkRunsAsScan(t, scan, full, qs, fusion+", a walk over every node")
		if fusion == retrieve.FusionRRF {
			continue
		}
		short := hybridStage(t, ix, fusion, retrieve.SearchHNSW, 24)
		checked := 0
		for _, q := range qs {
			if !walkIsExact(t, ix, exactVec, walk, lowWalk, q) {
				continue
			}
			checked += 3
			checkRunsAsScan(t, scan, short, []retrieve.Query{q}, "exact walks of 24")
		}
		if checked < 30 {
			t.Fatalf("the walk of 24 was exact for %d of %d (query, depth) pairs: too few to test the bound", checked, 3*len(qs))
		}
	}
	checkHybridWeights(t, ix, append(qs, retrieve.Query{Text: unembeddableTerm(t, ix)}))
}

// checkRunsAsScan: st.Run gives the scan's ranking for every question at
// depths 1, 10 and 30.
func checkRunsAsScan(t *testing.T, scan, st *retrieve.Stage, qs []retrieve.Query, what string) {
	t.Helper()
	ctx := context.Background()
	for _, q := range qs {
		sc, err := scan.Scores(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, depth := range []int{1, 10, 30} {
			want := scan.Ranking(sc, depth)
			if got, err := st.Run(ctx, q, depth); err != nil || !sameRanking(got, want) {
				t.Fatalf("%s, %q, depth %d: %v (%v), the scan %v", what, q.Text, depth, got, err, want)
			}
		}
	}
}

// checkHybridWeights: at BM25 weights 0 and 1, and for a question whose
// only term BM25 knows and LSA does not (a term of one passage), a walk
// over every node still gives the scan's ranking.
func checkHybridWeights(t *testing.T, ix *index.Index, qs []retrieve.Query) {
	ctx := context.Background()
	for _, w := range []float64{0, 0.8, 1} {
		scan := hybridStage(t, ix, retrieve.FusionConvex, retrieve.SearchExact, 24, w)
		full := hybridStage(t, ix, retrieve.FusionConvex, retrieve.SearchHNSW, 800, w)
		for _, q := range qs {
			sc, err := scan.Scores(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, depth := range []int{1, 10} {
				want := scan.Ranking(sc, depth)
				if got, err := full.Run(ctx, q, depth); err != nil || !sameRanking(got, want) {
					t.Fatalf("weight %v, %q, depth %d: the walk gives %v (%v), the scan %v", w, q.Text, depth, got, err, want)
				}
			}
		}
	}
}

// unembeddableTerm is a word of exactly one passage: BM25 indexes it,
// LSA (minimum document frequency 2) has no dimension for it.
func unembeddableTerm(t *testing.T, ix *index.Index) string {
	t.Helper()
	p := ix.Postings
	for term := 0; term+1 < len(p.Ptr); term++ {
		w := p.Terms.Term(term)
		if p.Ptr[term+1]-p.Ptr[term] != 1 || len(w) < 4 {
			continue
		}
		if _, err := retrieve.EmbedQuery(context.Background(), ix, retrieve.Query{Text: w}); errors.Is(err, index.ErrEmptyEmbedding) {
			return w
		}
	}
	t.Fatal("no term of one passage outside LSA's vocabulary")
	return ""
}

// sameRanking says whether two rankings list the same nodes in the same
// order with scores equal to float32 precision: the walk's cosines are
// the backend's row dot products, the scan's a GEMM's, which sum in
// another order.
func sameRanking(a, b []retrieve.Hit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Index != b[i].Index || math.Abs(float64(a[i].Score-b[i].Score)) > 4e-7*max(1, math.Abs(float64(b[i].Score))) {
			return false
		}
	}
	return true
}

// walkIsExact says whether the walks find q's exact top 24 and the exact
// least similar node (the best of −q).
func walkIsExact(t *testing.T, ix *index.Index, exact, walk, lowWalk retrieve.Method, q retrieve.Query) bool {
	t.Helper()
	ctx := context.Background()
	qv, err := retrieve.EmbedQuery(ctx, ix, q)
	if errors.Is(err, index.ErrEmptyEmbedding) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	neg := make([]float32, len(qv))
	for i, x := range qv {
		neg[i] = -x
	}
	for _, c := range []struct {
		q    retrieve.Query
		k    int
		walk retrieve.Method
	}{{q, 24, walk}, {retrieve.Query{Vector: neg}, 1, lowWalk}} {
		a, err1 := exact.Retrieve(ctx, c.q, c.k)
		b, err2 := c.walk.Retrieve(ctx, c.q, c.k)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a, b) {
			return false
		}
	}
	return true
}

// TestHybridRRFTiesAtTheCut: rrf over the graph fuses the walk with the
// bm25 stage's ranking even when BM25's list has a tie at the cut that
// only every match can decide (normalised scores equal there; the list
// is then ranked from every match). A walk over every node must give the
// scan's fusion at every rrf depth.
func TestHybridRRFTiesAtTheCut(t *testing.T) {
	ix, qs := openANNIndex(t)
	ctx := context.Background()
	ties := 0
	for _, rrfDepth := range []int{3, 7, 20, 50, 120, 300} {
		stage := func(search string) *retrieve.Stage {
			o := retrieve.DefaultStage()
			o.Kind, o.Hybrid.Fusion, o.Hybrid.Search, o.Hybrid.Ef, o.Hybrid.Depth = retrieve.StageHybrid, retrieve.FusionRRF, search, 800, rrfDepth
			st, err := retrieve.NewStage(ix, env().Backend, o)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		scan, full := stage(retrieve.SearchExact), stage(retrieve.SearchHNSW)
		for _, q := range qs {
			if tieAtCut(ix.BM25.Search(q.Text, rrfDepth+1), rrfDepth) {
				ties++
			}
			sc, err := scan.Scores(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			want := scan.Ranking(sc, 10)
			if got, err := full.Run(ctx, q, 10); err != nil || !sameRanking(got, want) {
				t.Fatalf("rrf depth %d, %q: the walk gives %v (%v), the scan %v", rrfDepth, q.Text, got, err, want)
			}
		}
	}
	if ties == 0 {
		t.Fatal("no BM25 list had a tie at the cut: the test does not reach the fallback")
	}
}

// tieAtCut says whether BM25's top depth+1 has equal normalised scores
// across the cut after depth.
func tieAtCut(hits []engine.Hit, depth int) bool {
	return len(hits) > depth && hits[depth].Score > 0 && hits[depth-1].Score/hits[0].Score == hits[depth].Score/hits[0].Score
}

// ivfIndex is annIndex with an inverted file of the given lists built by
// the build step (`gleaner graph build --kind ivf`), opened for the test.
func ivfIndex(t *testing.T, lists string, settings ...string) (string, *index.Index, []retrieve.Query) {
	t.Helper()
	dir, qs := annIndex(t)
	cfg, err := retrieve.NewBuildConfig(retrieve.SectionIVF)
	if err != nil {
		t.Fatal(err)
	}
	settings = append([]string{"lists", lists}, settings...)
	for i := 0; i+1 < len(settings); i += 2 {
		if err := cfg.Set(settings[i], settings[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := retrieve.Build(context.Background(), retrieve.BuildEnv{Backend: env().Backend}, dir, cfg); err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return dir, ix, qs
}

// TestVectorOnIVF: search ivf probing every list gives the exact hits and
// scores; probing four of 16 finds most of them and not all; search auto
// does not probe where the lists are too few to pay (nprobe 3), and
// probes them where they do (nprobe 2, an eighth), walking the graph from
// there (TestVectorSeeded) while the index has both, and alone once the
// graph is dropped.
func TestVectorOnIVF(t *testing.T) {
	dir, ix, qs := ivfIndex(t, "16")
	f, err := retrieve.IVFOf(ix)
	if err != nil || f.Lists != 16 {
		t.Fatalf("the inverted file: %v", err)
	}
	exact := vectorWith(t, ix, "search", "exact")
	full := vectorWith(t, ix, "search", "ivf", "nprobe", "16", "rescore", "100") // every row rescored
	few := vectorWith(t, ix, "search", "ivf", "nprobe", "4", "search-workers", "2")
	auto := vectorWith(t, ix, "nprobe", "3")
	found, total := 0, 0
	for _, q := range qs {
		want, err := exact.Retrieve(context.Background(), q, 10)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := full.Retrieve(context.Background(), q, 10); err != nil || !slices.Equal(got, want) {
			t.Fatalf("query %s: every list gives %v (%v), exact %v", q.ID, got, err, want)
		}
		if got, err := auto.Retrieve(context.Background(), q, 10); err != nil || !slices.Equal(got, want) {
			t.Fatalf("query %s: auto with nprobe 3 of 16 gives %v (%v), exact %v", q.ID, got, err, want)
		}
		approx, err := few.Retrieve(context.Background(), q, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range approx {
			total++
			if slices.Contains(want, h) {
				found++
			}
		}
	}
	r := float64(found) / float64(total)
	t.Logf("nprobe 4 of 16 finds %.3f of the exact top 10", r)
	if r < 0.6 || r == 1 {
		t.Fatalf("nprobe 4 of 16 finds %.3f of the exact top 10, want [0.6, 1)", r)
	}
	probing := vectorWith(t, ix, "nprobe", "2", "seeded-ef", "10")
	two := vectorWith(t, ix, "search", "seeded", "nprobe", "2", "seeded-ef", "10")
	differ := 0
	for _, q := range qs {
		want, err := two.Retrieve(context.Background(), q, 10)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := probing.Retrieve(context.Background(), q, 10); err != nil || !slices.Equal(got, want) {
			t.Fatalf("query %s: auto with nprobe 2 of 16 gives %v (%v), search seeded %v", q.ID, got, err, want)
		}
		if ex, _ := exact.Retrieve(context.Background(), q, 10); !slices.Equal(ex, want) {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("nprobe 2 of 16 and the walk found the exact hits for every query: auto's probe is not tested")
	}
	// Without the graph, auto probes the file alone where it pays.
	if err := index.DropSection(context.Background(), dir, retrieve.SectionHNSW); err != nil {
		t.Fatal(err)
	}
	alone, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer alone.Close()
	probing, file := vectorWith(t, alone, "nprobe", "2"), vectorWith(t, alone, "search", "ivf", "nprobe", "2")
	for _, q := range qs {
		if got, want := retrieveOK(t, probing, q), retrieveOK(t, file, q); !slices.Equal(got, want) {
			t.Fatalf("query %s: auto with nprobe 2 of 16 and no graph gives %v, search ivf %v", q.ID, got, want)
		}
	}
}

// TestVectorSeeded: search seeded walks the graph from the file's answer:
// from every list, or at an ef of every node, it gives the exact hits and
// scores; from two lists of 16 at ef 10 it scores rank for rank at least
// as well as the file alone and finds more of the exact top 10 than it,
// not all; it needs both structures, and says how to build either.
func TestVectorSeeded(t *testing.T) {
	_, ix, qs := ivfIndex(t, "16")
	exact := vectorWith(t, ix, "search", "exact")
	every := vectorWith(t, ix, "search", "seeded", "nprobe", "16", "rescore", "100", "seeded-ef", "10")
	wide := vectorWith(t, ix, "search", "seeded", "nprobe", "1", "seeded-ef", "800")
	file := vectorWith(t, ix, "search", "ivf", "nprobe", "2")
	walk := vectorWith(t, ix, "search", "seeded", "nprobe", "2", "seeded-ef", "10")
	byFile, byWalk, total := 0, 0, 0
	for _, q := range qs {
		want := retrieveOK(t, exact, q)
		for name, m := range map[string]retrieve.Method{"every list": every, "ef 800": wide} {
			if got := retrieveOK(t, m, q); !slices.Equal(got, want) {
				t.Fatalf("query %s: seeded from %s gives %v, exact %v", q.ID, name, got, want)
			}
		}
		probe, walked := retrieveOK(t, file, q), retrieveOK(t, walk, q)
		for r := range probe {
			if r >= len(walked) || walked[r].Score < probe[r].Score {
				t.Fatalf("query %s: the walk from the file's answer %v scores below it %v at rank %d", q.ID, walked, probe, r)
			}
		}
		for _, h := range want {
			total++
			if slices.Contains(probe, h) {
				byFile++
			}
			if slices.Contains(walked, h) {
				byWalk++
			}
		}
	}
	t.Logf("of the exact top 10, nprobe 2 of 16 finds %.3f, the walk from it at ef 10 %.3f", float64(byFile)/float64(total), float64(byWalk)/float64(total))
	if byWalk <= byFile || byWalk == total {
		t.Fatalf("of %d exact hits the file found %d and the walk from it %d: want more, not all", total, byFile, byWalk)
	}
	for _, lacks := range []struct {
		ix   func(*testing.T) *index.Index
		kind string
	}{
		{func(t *testing.T) *index.Index { ix, _ := openANNIndex(t); return ix }, "--kind ivf"},
		{func(t *testing.T) *index.Index { ix, _ := openIndex(t); return ix }, "--kind hnsw"},
	} {
		cfg, _ := retrieve.NewConfig("vector")
		if err := cfg.Set("search", "seeded"); err != nil {
			t.Fatal(err)
		}
		if _, err := retrieve.New(lacks.ix(t), env(), cfg); !errors.Is(err, index.ErrNotBuilt) || !strings.Contains(err.Error(), lacks.kind) {
			t.Errorf("seeded without what %s builds: %v", lacks.kind, err)
		}
	}
	c, _ := retrieve.NewConfig("vector")
	if err := c.Set("seeded-ef", "0"); err == nil && c.Validate() == nil {
		t.Error("seeded-ef 0 accepted")
	}
}

func retrieveOK(t *testing.T, m retrieve.Method, q retrieve.Query) []retrieve.Hit {
	t.Helper()
	hits, err := m.Retrieve(context.Background(), q, 10)
	if err != nil {
		t.Fatalf("query %s: %v", q.ID, err)
	}
	return hits
}

// TestVectorWithoutIVF: search ivf says how to build the file; a damaged
// one is refused at open, never passed over.
func TestVectorWithoutIVF(t *testing.T) {
	ix, _ := openIndex(t)
	cfg, _ := retrieve.NewConfig("vector")
	if err := cfg.Set("search", "ivf"); err != nil {
		t.Fatal(err)
	}
	if _, err := retrieve.New(ix, env(), cfg); !errors.Is(err, index.ErrNotBuilt) || !strings.Contains(err.Error(), "--kind ivf") {
		t.Fatalf("ivf without the file: %v", err)
	}
	for _, bad := range [][2]string{{"nprobe", "0"}, {"search-workers", "0"}, {"search-workers", "100000"}} {
		c, _ := retrieve.NewConfig("vector")
		if err := c.Set(bad[0], bad[1]); err == nil {
			if err := c.Validate(); err == nil {
				t.Errorf("%s %s accepted", bad[0], bad[1])
			}
		}
	}
	dir, ix2, _ := ivfIndex(t, "8")
	f, err := retrieve.IVFOf(ix2)
	if err != nil {
		t.Fatal(err)
	}
	ids := slices.Clone(f.IDs)
	ids[1] = ids[0] // a row filed twice, stored with a valid checksum
	meta := map[string]any{"lists": 8, "sample": 64, "iterations": 10, "seed": 1, "codes": "none", "built_lists": f.Lists, "nodes": f.N, "dims": f.Dims}
	err = index.SetSection(context.Background(), dir, retrieve.SectionIVF, meta, func(w *index.SectionWriter) error {
		return errors.Join(w.F32("centroids.f32", slices.Clone(f.Centroids)), w.I64("offsets.i64", slices.Clone(f.Offsets)), w.I32("ids.i32", ids))
	})
	if err != nil {
		t.Fatal(err)
	}
	ix3, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix3.Close()
	c, _ := retrieve.NewConfig("vector")
	if _, err := retrieve.New(ix3, env(), c); err == nil || errors.Is(err, index.ErrNotBuilt) || !strings.Contains(err.Error(), "filed twice") {
		t.Fatalf("auto over a damaged inverted file: %v", err)
	}
}

// TestVectorReadsIVFCodes: over a file built with codes, method vector
// answers as the file's SearchCodes does with the backend's scorers (4·k
// candidates); over one built without, as its Search does.
func TestVectorReadsIVFCodes(t *testing.T) {
	_, ix, qs := ivfIndex(t, "16")
	f, err := retrieve.IVFOf(ix)
	if err != nil || f.Codes == nil {
		t.Fatalf("the default build has no codes: %v", err)
	}
	be := env().Backend
	dot, codes := engine.DotRowsOf(be), engine.CodeScorerOf(be)
	if codes == nil {
		t.Fatal("the cpu backend scores no codes")
	}
	// One candidate per hit, so that the codes' ranking shows in the hits.
	m := vectorWith(t, ix, "search", "ivf", "nprobe", "3", "search-workers", "1", "rescore", "1")
	differ := 0
	for _, q := range qs {
		v, err := retrieve.EmbedQuery(context.Background(), ix, q)
		if errors.Is(err, index.ErrEmptyEmbedding) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		want, err := f.SearchCodes(ix.Vectors, v, 10, 3, 1, 1, dot, codes)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := m.Retrieve(context.Background(), q, 10); err != nil || !slices.Equal(got, want) {
			t.Fatalf("query %s: %v (%v), SearchCodes %v", q.ID, got, err, want)
		}
		if rows, _ := f.Search(ix.Vectors, v, 10, 3, 1, dot); !slices.Equal(rows, want) {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("the codes found what the rows did for every query: the test cannot tell which was read")
	}
}

// TestHybridOnIVF: over the inverted file, the hybrid stage's Run fuses
// BM25's top list with the probe's. Probing every list (the search for
// the range's end too) gives exactly the scan's ranking under both
// fusions, with a dense list as long as the index and with one of 24,
// where BM25's list must grow until the bound on what the lists leave out
// is beaten. Search auto probes only where it pays, and search ivf on an
// index without the file says how to build it.
func TestHybridOnIVF(t *testing.T) {
	_, ix, qs := ivfIndex(t, "16", "codes", "none") // rows, so that every list probed is exact
	qs = append(qs, retrieve.Query{Text: "no such words zzqx"})
	for _, fusion := range []string{retrieve.FusionConvex, retrieve.FusionRRF} {
		scan := hybridStage(t, ix, fusion, retrieve.SearchExact, 24)
		for _, ef := range []int{800, 24} {
			every := hybridOnIVF(t, ix, fusion, retrieve.SearchIVF, ef, 16)
			checkRunsAsScan(t, scan, every, qs, fmt.Sprintf("%s, a list of %d from every list", fusion, ef))
		}
	}
	checkHybridAutoProbes(t, ix, qs)
	bare, _ := openIndex(t)
	o := retrieve.DefaultStage()
	o.Kind, o.Hybrid.Search = retrieve.StageHybrid, retrieve.SearchIVF
	if _, err := retrieve.NewStage(bare, env().Backend, o); !errors.Is(err, index.ErrNotBuilt) || !strings.Contains(err.Error(), "--kind ivf") {
		t.Fatalf("hybrid-search ivf without the file: %v", err)
	}
}

// checkHybridAutoProbes: search auto over 16 lists of 800 rows ranks as
// search ivf at hybrid-nprobe 2 (an eighth) and a dense list of 32 (4 %
// of the rows), and as the scan at nprobe 3 or a list of 128 (an eighth
// of the rows would not hold it); the probe and the scan differ for some
// question, so that the test tells them apart.
func checkHybridAutoProbes(t *testing.T, ix *index.Index, qs []retrieve.Query) {
	t.Helper()
	ctx := context.Background()
	scan := hybridStage(t, ix, retrieve.FusionConvex, retrieve.SearchExact, 24)
	// A list of 32: the index's HNSW graph would pay for a walk of 24.
	probes, two := hybridOnIVF(t, ix, retrieve.FusionConvex, retrieve.SearchAuto, 32, 2), hybridOnIVF(t, ix, retrieve.FusionConvex, retrieve.SearchIVF, 32, 2)
	scans, long := hybridOnIVF(t, ix, retrieve.FusionConvex, retrieve.SearchAuto, 32, 3), hybridOnIVF(t, ix, retrieve.FusionConvex, retrieve.SearchAuto, 128, 2)
	differ := 0
	for _, q := range qs {
		sc, err := scan.Scores(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want := scan.Ranking(sc, 10)
		if got, err := scans.Run(ctx, q, 10); err != nil || !sameRanking(got, want) {
			t.Fatalf("%q: auto with nprobe 3 of 16 gives %v (%v), the scan %v", q.Text, got, err, want)
		}
		if got, err := long.Run(ctx, q, 10); err != nil || !sameRanking(got, want) {
			t.Fatalf("%q: auto with a list of 128 of 800 rows gives %v (%v), the scan %v", q.Text, got, err, want)
		}
		approx, err1 := two.Run(ctx, q, 10)
		got, err2 := probes.Run(ctx, q, 10)
		if err := errors.Join(err1, err2); err != nil || !slices.Equal(got, approx) {
			t.Fatalf("%q: auto with nprobe 2 of 16 gives %v (%v), search ivf %v", q.Text, got, err, approx)
		}
		if !sameRanking(approx, want) {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("2 of 16 lists gave the scan's ranking for every question: auto's probe is not tested")
	}
}

// TestVectorDefaultsOnManyCPUs: the default search workers stay within
// their own bound on a machine with more CPUs than it.
func TestVectorDefaultsOnManyCPUs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(96))
	cfg, err := retrieve.NewConfig("vector")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the defaults on 96 CPUs: %v", err)
	}
}

// TestHNSWCodesRecorded: the graph records what its build's searches
// scored (int8 codes by default, the vectors when asked), and a refresh
// rebuilds with it: a graph from before codes on the vectors, an unknown
// value refused as not refreshable.
func TestHNSWCodesRecorded(t *testing.T) {
	for _, c := range []struct {
		set  [][2]string
		want string
	}{{nil, retrieve.CodesInt8}, {[][2]string{{"codes", retrieve.CodesNone}}, retrieve.CodesNone}} {
		dir, _ := annIndex(t, c.set...)
		ix, err := index.Open(dir, store.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var m struct{ Codes string }
		if err := json.Unmarshal(ix.Meta.Sections[retrieve.SectionHNSW].Meta, &m); err != nil || m.Codes != c.want {
			t.Fatalf("settings %v: the graph records codes %q (%v), want %q", c.set, m.Codes, err, c.want)
		}
		if _, err := ix.Section(retrieve.SectionHNSW); err != nil {
			t.Fatalf("settings %v: %v", c.set, err)
		}
		ix.Close()
	}
	st, _ := index.LookupSection(retrieve.SectionHNSW)
	for _, c := range []struct {
		settings string
		ok       bool
	}{
		{`{"m":8,"ef_construction":40,"seed":1}`, true},
		{`{"m":8,"ef_construction":40,"seed":1,"codes":"none"}`, true},
		{`{"m":8,"ef_construction":40,"seed":1,"codes":"int8"}`, true},
		{`{"m":8,"ef_construction":40,"seed":1,"codes":"int4"}`, false},
	} {
		err := st.CanRefresh(nil, json.RawMessage(c.settings))
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, index.ErrNotRefreshable)) {
			t.Fatalf("refresh of %s: %v", c.settings, err)
		}
	}
}
