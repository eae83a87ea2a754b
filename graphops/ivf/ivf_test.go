package ivf

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
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
