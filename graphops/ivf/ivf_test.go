package ivf

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops/hnsw"
)

// clustered is n unit rows of d values around c seeded centres.
func clustered(n, d, c int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 7))
	centres := make([]float64, c*d)
	for i := range centres {
		centres[i] = r.NormFloat64()
	}
	X := make([]float32, n*d)
	for i := range n {
		k := r.IntN(c)
		var s float64
		row := X[i*d : (i+1)*d]
		for j := range row {
			x := centres[k*d+j] + 0.4*r.NormFloat64()
			row[j] = float32(x)
			s += x * x
		}
		for j := range row {
			row[j] = float32(float64(row[j]) / math.Sqrt(s))
		}
	}
	return X
}

// exact is q's top k over every row, by hnsw.GoDot, best first and the
// lower row on a tie.
func exact(X []float32, n, d int, q []float32, k int) []engine.Hit {
	sc := make([]float32, n)
	hnsw.GoDot(X, d, identity(n), q, sc)
	hits := make([]engine.Hit, n)
	for i := range hits {
		hits[i] = engine.Hit{Index: int32(i), Score: sc[i]}
	}
	slices.SortFunc(hits, func(a, b engine.Hit) int {
		switch {
		case a.Score > b.Score || (a.Score == b.Score && a.Index < b.Index):
			return -1
		case a == b:
			return 0
		}
		return 1
	})
	return hits[:k]
}

func build(t *testing.T, X []float32, n, d int, o Options) *Index {
	t.Helper()
	ix, err := Build(context.Background(), X, n, d, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Check(n, d); err != nil {
		t.Fatalf("a built index fails its check: %v", err)
	}
	return ix
}

// TestFullProbeIsExact: probing every list scores every row, so the hits
// and scores are the exact scan's, on any number of workers.
func TestFullProbeIsExact(t *testing.T) {
	const n, d = 1500, 24
	X := clustered(n, d, 20, 1)
	ix := build(t, X, n, d, DefaultOptions(32))
	Q := clustered(30, d, 20, 2)
	for i := range 30 {
		q := Q[i*d : (i+1)*d]
		want := exact(X, n, d, q, 10)
		for _, w := range []int{1, 3} {
			got, err := ix.Search(X, q, 10, 32, w, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("query %d, %d workers: %v, exact %v", i, w, got, want)
			}
		}
	}
}

// TestFewListsFindMost: probing 4 lists of 32 finds most of the exact top
// 10 on clustered rows, and the same hits on any number of workers; it is
// not an exact scan in disguise.
func TestFewListsFindMost(t *testing.T) {
	const n, d = 3000, 24
	X := clustered(n, d, 40, 3)
	ix := build(t, X, n, d, DefaultOptions(32))
	Q := clustered(50, d, 40, 4)
	found, total := 0, 0
	for i := range 50 {
		q := Q[i*d : (i+1)*d]
		got, err := ix.Search(X, q, 10, 4, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		par, err := ix.Search(X, q, 10, 4, 2, nil)
		if err != nil || !slices.Equal(par, got) {
			t.Fatalf("query %d: 2 workers give %v (%v), 1 gives %v", i, par, err, got)
		}
		for _, h := range exact(X, n, d, q, 10) {
			total++
			if slices.Contains(got, h) {
				found++
			}
		}
	}
	r := float64(found) / float64(total)
	t.Logf("nprobe 4 of 32 finds %.3f of the exact top 10", r)
	if r < 0.85 || r == 1 {
		t.Fatalf("nprobe 4 of 32 finds %.3f of the exact top 10, want [0.85, 1)", r)
	}
}

// TestBuildIsDeterministic: the same rows and options give the same lists,
// with the portable Nearest or one that assigns in a different order.
func TestBuildIsDeterministic(t *testing.T) {
	const n, d = 2000, 16
	X := clustered(n, d, 25, 5)
	a := build(t, X, n, d, DefaultOptions(40))
	o := DefaultOptions(40)
	o.Nearest = func(ctx context.Context, C []float32, nc, d int, X []float32, nx int, out []int32) error {
		for i := nx - 1; i >= 0; i-- { // backwards, one row at a time
			if err := GoNearest(ctx, C, nc, d, X[i*d:(i+1)*d], 1, out[i:i+1]); err != nil {
				return err
			}
		}
		return nil
	}
	b := build(t, X, n, d, o)
	if !reflect.DeepEqual(a.Centroids, b.Centroids) || !slices.Equal(a.Offsets, b.Offsets) || !slices.Equal(a.IDs, b.IDs) {
		t.Fatal("two builds of the same rows differ")
	}
	o.Seed = 2
	if c := build(t, X, n, d, o); reflect.DeepEqual(a.Centroids, c.Centroids) {
		t.Fatal("another seed gave the same centroids: the sample does not follow the seed")
	}
}

// TestFewerRowsThanLists: a build over fewer rows than lists makes one
// list per row, and a search still finds the rows.
func TestFewerRowsThanLists(t *testing.T) {
	const n, d = 5, 8
	X := clustered(n, d, 5, 6)
	ix := build(t, X, n, d, DefaultOptions(16))
	if ix.Lists != n {
		t.Fatalf("%d lists for %d rows", ix.Lists, n)
	}
	got, err := ix.Search(X, X[:d], 10, 5, 1, nil)
	if err != nil || len(got) != n || got[0].Index != 0 {
		t.Fatalf("search over 5 rows: %v, %v", got, err)
	}
	empty, err := Build(context.Background(), nil, 0, d, DefaultOptions(16), nil)
	if err != nil || empty.Check(0, d) != nil {
		t.Fatalf("empty build: %v", err)
	}
	if hits, err := empty.Search(nil, X[:d], 10, 1, 1, nil); err != nil || hits != nil {
		t.Fatalf("search of an empty index: %v, %v", hits, err)
	}
	o := DefaultOptions(16)
	o.Codes = true
	coded, err := Build(context.Background(), nil, 0, d, o, nil)
	if err != nil || coded.Check(0, d) != nil || coded.Codes == nil {
		t.Fatalf("empty build with codes: %v, codes %v", err, coded.Codes)
	}
	if hits, err := coded.SearchCodes(nil, X[:d], 10, 1, 1, 4, nil, nil); err != nil || hits != nil {
		t.Fatalf("code search of an empty index: %v, %v", hits, err)
	}
}

// TestCheckRejects: every kind of damage a stored index can carry is
// refused with what is wrong.
func TestCheckRejects(t *testing.T) {
	const n, d = 300, 8
	X := clustered(n, d, 6, 7)
	good := build(t, X, n, d, DefaultOptions(8))
	damage := map[string]func(ix *Index){
		"filed twice":   func(ix *Index) { ix.IDs[1] = ix.IDs[0] },
		"out of range":  func(ix *Index) { ix.IDs[0] = n },
		"out of order":  func(ix *Index) { ix.IDs[0], ix.IDs[1] = ix.IDs[1], ix.IDs[0] },
		"offsets":       func(ix *Index) { ix.Offsets[1], ix.Offsets[2] = ix.Offsets[2]+1, ix.Offsets[1] },
		"run from":      func(ix *Index) { ix.Offsets[ix.Lists]-- },
		"is NaN":        func(ix *Index) { ix.Centroids[3] = float32(math.NaN()) },
		"centroid":      func(ix *Index) { ix.Centroids = ix.Centroids[:len(ix.Centroids)-1] },
		"lists for":     func(ix *Index) { ix.Lists = n + 1 },
		"matrix 300×9":  func(ix *Index) { ix.Dims = 9 },
		"negative list": func(ix *Index) { ix.Lists = -1 },
		"past the end":  func(ix *Index) { ix.Offsets[1] = int64(n + 1) },
		"far past":      func(ix *Index) { ix.Offsets[1] = 1 << 62 },
	}
	for want, hurt := range damage {
		ix := &Index{N: good.N, Dims: good.Dims, Lists: good.Lists, Centroids: slices.Clone(good.Centroids),
			Offsets: slices.Clone(good.Offsets), IDs: slices.Clone(good.IDs)}
		hurt(ix)
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("%s: Check panicked: %v", want, r)
				}
			}()
			return ix.Check(n, d)
		}()
		if err == nil {
			t.Errorf("%s: accepted", want)
		}
	}
}

// TestRefusesBadArguments: options, shapes and searches out of range are
// errors, and a cancelled build stops.
func TestRefusesBadArguments(t *testing.T) {
	const n, d = 200, 8
	X := clustered(n, d, 4, 8)
	for _, o := range []Options{{Lists: 0, Sample: 1, Iterations: 1}, {Lists: 1, Sample: 0, Iterations: 1},
		{Lists: 1, Sample: 1, Iterations: 0}, {Lists: MaxLists + 1, Sample: 1, Iterations: 1}} {
		if _, err := Build(context.Background(), X, n, d, o, nil); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	if _, err := Build(context.Background(), X[:10], n, d, DefaultOptions(4), nil); err == nil {
		t.Error("a short matrix accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, X, n, d, DefaultOptions(4), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled build: %v", err)
	}
	ix := build(t, X, n, d, DefaultOptions(4))
	for name, call := range map[string]func() error{
		"nprobe 0":   func() error { _, err := ix.Search(X, X[:d], 5, 0, 1, nil); return err },
		"workers 0":  func() error { _, err := ix.Search(X, X[:d], 5, 1, 0, nil); return err },
		"short q":    func() error { _, err := ix.Search(X, X[:d-1], 5, 1, 1, nil); return err },
		"short X":    func() error { _, err := ix.Search(X[:d], X[:d], 5, 1, 1, nil); return err },
		"workers 1M": func() error { _, err := ix.Search(X, X[:d], 5, 1, 1<<20, nil); return err },
	} {
		if err := call(); err == nil || !strings.HasPrefix(err.Error(), "ivf: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestListsFor: 4·√n to the nearest power of two, within [1, MaxLists].
func TestListsFor(t *testing.T) {
	for n, want := range map[int]int{0: 1, 1: 4, 10_000: 512, 100_000: 1024, 1_000_000: 4096, 1_000_000_000: 131072} {
		if got := ListsFor(n); got != want {
			t.Errorf("ListsFor(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestSearchCodes: reading the lists' int8 codes and rescoring 4·k
// candidates finds almost all of Search's hits at the same nprobe, with
// Search's exact scores; with every row a candidate it is the exact
// search; the hits do not depend on the workers.
func TestSearchCodes(t *testing.T) {
	const n, d = 3000, 24
	X := clustered(n, d, 40, 9)
	o := DefaultOptions(32)
	o.Codes = true
	ix := build(t, X, n, d, o)
	for i, v := range ix.IDs { // position i codes row v, within half a step
		for j := range d {
			if e := math.Abs(float64(ix.Codes[i*d+j])*float64(ix.Scales[i]) - float64(X[int(v)*d+j])); e > 0.5001*float64(ix.Scales[i]) {
				t.Fatalf("position %d (row %d) value %d: code %d × %v, row %v", i, v, j, ix.Codes[i*d+j], ix.Scales[i], X[int(v)*d+j])
			}
		}
	}
	Q := clustered(50, d, 40, 10)
	same, total := 0, 0
	for i := range 50 {
		q := Q[i*d : (i+1)*d]
		want, err := ix.Search(X, q, 10, 4, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ix.SearchCodes(X, q, 10, 4, 1, 4, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if par, err := ix.SearchCodes(X, q, 10, 4, 3, 4, nil, nil); err != nil || !slices.Equal(par, got) {
			t.Fatalf("query %d: 3 workers give %v (%v), 1 gives %v", i, par, err, got)
		}
		for _, h := range got {
			total++
			if slices.Contains(want, h) { // the same row with the same score
				same++
			}
		}
		all, err := ix.SearchCodes(X, q, 10, 32, 2, n, nil, nil)
		if err != nil || !slices.Equal(all, exact(X, n, d, q, 10)) {
			t.Fatalf("query %d: every row rescored gives %v (%v), exact %v", i, all, err, exact(X, n, d, q, 10))
		}
	}
	r := float64(same) / float64(total)
	t.Logf("codes with 4·k candidates find %.3f of Search's hits", r)
	if r < 0.98 {
		t.Fatalf("codes with 4·k candidates find %.3f of Search's hits, want ≥ 0.98", r)
	}
	plain := build(t, X, n, d, DefaultOptions(32))
	if _, err := plain.SearchCodes(X, Q[:d], 10, 4, 1, 4, nil, nil); err == nil {
		t.Fatal("SearchCodes on an index without codes")
	}
	if _, err := ix.SearchCodes(X, Q[:d], 10, 4, 1, 0, nil, nil); err == nil {
		t.Fatal("rescore 0 accepted")
	}
	for name, hurt := range map[string]func(c *Index){
		"short codes": func(c *Index) { c.Codes = c.Codes[:len(c.Codes)-1] },
		"NaN scale":   func(c *Index) { c.Scales[5] = float32(math.NaN()) },
		"no scales":   func(c *Index) { c.Scales = nil },
	} {
		c := &Index{N: ix.N, Dims: ix.Dims, Lists: ix.Lists, Centroids: ix.Centroids, Offsets: ix.Offsets, IDs: ix.IDs,
			Codes: slices.Clone(ix.Codes), Scales: slices.Clone(ix.Scales)}
		hurt(c)
		if err := c.Check(n, d); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestNeverShort: lists left empty (duplicate rows: the split copies of a
// centroid keep no row) and lists too short for k are passed over, so a
// search returns k hits whatever nprobe, with codes too.
func TestNeverShort(t *testing.T) {
	const n, d = 300, 8
	base := clustered(3, d, 3, 11)
	X := make([]float32, 0, n*d)
	for i := range n {
		X = append(X, base[(i%3)*d:(i%3+1)*d]...)
	}
	o := DefaultOptions(16)
	o.Codes = true
	ix := build(t, X, n, d, o)
	empty := 0
	for l := range ix.Lists {
		if ix.size(int32(l)) == 0 {
			empty++
		}
	}
	if empty == 0 {
		t.Fatal("no empty list: the test does not test what it says")
	}
	for _, k := range []int{10, 150} {
		for nprobe := 1; nprobe <= 16; nprobe++ {
			got, err := ix.Search(X, X[:d], k, nprobe, 2, nil)
			if err != nil || len(got) != k {
				t.Fatalf("k %d nprobe %d (%d lists empty): %d hits, %v", k, nprobe, empty, len(got), err)
			}
			got, err = ix.SearchCodes(X, X[:d], k, nprobe, 2, 1, nil, nil)
			if err != nil || len(got) != k {
				t.Fatalf("codes, k %d nprobe %d: %d hits, %v", k, nprobe, len(got), err)
			}
		}
	}
}

// TestMain lets every search of the tests' small indexes be shared among
// its workers, so the parallel scan and merge are what is tested.
func TestMain(m *testing.M) {
	minShare = 64 // bytes: a few rows per worker
	os.Exit(m.Run())
}
