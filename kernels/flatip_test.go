package kernels

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"testing"
)

// refFlat is the float64 reference of FlatIP.
func refFlat(X []float32, n, d int, q []float32, k int) []Hit {
	type s struct {
		i int
		v float64
	}
	all := make([]s, n)
	for r := 0; r < n; r++ {
		var acc float64
		for j := 0; j < d; j++ {
			acc += float64(X[r*d+j]) * float64(q[j])
		}
		all[r] = s{r, acc}
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].v > all[b].v })
	out := make([]Hit, min(k, n))
	for i := range out {
		out[i] = Hit{Index: int32(all[i].i), Score: float32(all[i].v)}
	}
	return out
}

func randMat(rng *rand.Rand, n int) []float32 {
	m := make([]float32, n)
	for i := range m {
		m[i] = float32(rng.NormFloat64())
	}
	return m
}

// eachDotImpl runs fn with every dot-product implementation this CPU has.
func eachDotImpl(t *testing.T, fn func(t *testing.T)) {
	saved, savedScan := dotBlock, scanTop
	defer func() { dotBlock, scanTop = saved, savedScan }()
	for name, impl := range dotImpls {
		dotBlock, scanTop = impl, scanTopImpls[name]
		t.Run(name, fn)
	}
}

func TestFlatIPMatchesReference(t *testing.T) { eachDotImpl(t, testFlatIPMatchesReference) }

// TestBatchIndependent checks that a query scores the same alone and in a
// batch, for every implementation.
func TestBatchIndependent(t *testing.T) {
	eachDotImpl(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 8))
		// 45 has a tail past the last 16 lanes; 384 is the common width,
		// with only whole lanes. Up to 8 queries (AVX2: 4) are scored a row at a
		// time (4, then the last 1 to 3 in one pass), more by 4 × 4 tiles
		// and the last 1 to 3 a row at a time (AVX2: 4 × 3 tiles over
		// chunks of 16 rows at d 384, the last pair or query a row at a
		// time); 37 rows leave a remainder in every tile shape and chunk.
		for _, c := range [][2]int{{45, 5}, {45, 7}, {45, 9}, {45, 10}, {384, 6}, {384, 11}, {384, 17}} {
			d, n, nq := c[0], 37, c[1]
			X, Q := randMat(rng, n*d), randMat(rng, nq*d)
			all := make([]float32, nq*n)
			dotBlock(X, n, d, Q, nq, all)
			for q := 0; q < nq; q++ {
				one := make([]float32, n)
				dotBlock(X, n, d, Q[q*d:(q+1)*d], 1, one)
				for r := range one {
					if one[r] != all[q*n+r] {
						t.Fatalf("d=%d query %d row %d: alone %v, in a batch %v", d, q, r, one[r], all[q*n+r])
					}
				}
			}
		}
	})
}

func testFlatIPMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 3, 17, 129, 1000} {
		for _, d := range []int{1, 3, 8, 17, 64, 129} {
			for _, nq := range []int{1, 2, 3, 5} {
				X, Q := randMat(rng, n*d), randMat(rng, nq*d)
				k := 10
				got, err := FlatIP(context.Background(), X, n, d, Q, nq, k, 3)
				if err != nil {
					t.Fatal(err)
				}
				// float32 accumulation of d products of N(0,1) values: error
				// grows like sqrt(d)·eps·|terms|; allow 1e-4·d in relative terms.
				tol := 1e-5 * float64(d) * 4
				for q := 0; q < nq; q++ {
					want := refFlat(X, n, d, Q[q*d:q*d+d], k)
					checkHits(t, n, d, q, got[q], want, tol)
				}
			}
		}
	}
}

func checkHits(t *testing.T, n, d, q int, got, want []Hit, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("n=%d d=%d q=%d: got %d hits, want %d", n, d, q, len(got), len(want))
	}
	for i := range want {
		diff := math.Abs(float64(got[i].Score - want[i].Score))
		if diff > tol*(1+math.Abs(float64(want[i].Score))) || got[i].Score != got[i].Score {
			t.Errorf("n=%d d=%d q=%d rank %d: score %v want %v", n, d, q, i, got[i].Score, want[i].Score)
		}
		if got[i].Index != want[i].Index && diff > tol {
			// a different index is only acceptable for a near-tie
			t.Errorf("n=%d d=%d q=%d rank %d: index %d want %d", n, d, q, i, got[i].Index, want[i].Index)
		}
	}
}

func TestFlatIPTiesStableByIndex(t *testing.T) {
	X := []float32{1, 0, 1, 0, 2, 0, 1, 0} // rows 0,1,3 tie at 1; row 2 scores 2
	got, err := FlatIP(context.Background(), X, 4, 2, []float32{1, 0}, 1, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []Hit{{Index: 2, Score: 2}, {Index: 0, Score: 1}, {Index: 1, Score: 1}}
	for i := range want {
		if got[0][i] != want[i] {
			t.Fatalf("got %v want %v", got[0], want)
		}
	}
}

func TestFlatIPRejectsBadShapes(t *testing.T) {
	if _, err := FlatIP(context.Background(), make([]float32, 3), 2, 2, []float32{1, 1}, 1, 1, 1); err == nil {
		t.Fatal("short matrix accepted")
	}
	if _, err := FlatIP(context.Background(), nil, 0, 0, nil, 0, 1, 1); err == nil {
		t.Fatal("d=0 accepted")
	}
}

// TestFlatIPRejectsHugeShapes: more rows than an int32 numbers, and sizes
// whose products overflow an int, are errors, not a crash in a worker.
func TestFlatIPRejectsHugeShapes(t *testing.T) {
	ctx := context.Background()
	if _, err := FlatIP(ctx, nil, 4, 1<<62, nil, 4, 1, 1); err == nil {
		t.Fatal("n·d overflowing an int accepted")
	}
	if _, err := FlatIP(ctx, []float32{1}, 1, 1, nil, 1<<62, 1, 1); err == nil {
		t.Fatal("nq·d overflowing an int accepted")
	}
	if _, err := FlatIP(ctx, nil, math.MaxInt32+1, 1, nil, 0, 1, 1); err == nil {
		t.Fatal("more rows than int32 indexes accepted")
	}
}

// TestFlatIPHeapsSizedByRows: a worker's heaps hold at most its rows, so
// many workers and k = n cost about one n of hits, not one per worker.
func TestFlatIPHeapsSizedByRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	n, workers := 1<<16, 64
	X, Q := randMat(rng, n), randMat(rng, 1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := FlatIP(context.Background(), X, n, 1, Q, 1, n, workers); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	// the result and the merge hold a few n of 8-byte hits; heaps of k
	// each would add workers·n·8 bytes (32 MiB)
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Fatalf("FlatIP with k = n on %d workers allocated %d MiB", workers, got>>20)
	}
}

func TestFlatIPCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rng := rand.New(rand.NewPCG(3, 4))
	if _, err := FlatIP(ctx, randMat(rng, 1000*4), 1000, 4, randMat(rng, 4), 1, 5, 1); err == nil {
		t.Fatal("cancelled context ignored")
	}
}

// TestScanTopStops checks that scanTop stops at a set flag before scoring
// anything, and otherwise scores every row.
func TestScanTopStops(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	n, d, k := 3*flatBlockRows+7, 8, 4
	X, Q := randMat(rng, n*d), randMat(rng, 2*d)
	for name, scan := range scanTopImpls {
		for _, stopped := range []bool{true, false} {
			s := &scanState{hits: make([]Hit, 2*k), counts: make([]int32, 2), k: k, stop: new(int32), buf: make([]float32, 2*scanBlockRows)}
			if stopped {
				*s.stop = 1
			}
			counts := s.counts
			if got := scan(X, n, d, Q, 2, 0, s); got != stopped {
				t.Fatalf("%s: stop flag %v, scanTop returned %v", name, stopped, got)
			}
			want := int32(k)
			if stopped {
				want = 0
			}
			if counts[0] != want || counts[1] != want {
				t.Fatalf("%s, stop flag %v: %v hits kept, want %d each", name, stopped, counts, want)
			}
		}
	}
}

func TestTopKMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{0, 1, 3, 17} {
		h := NewTopK(k)
		var all []Hit
		for i := 0; i < 200; i++ {
			v := float32(rng.IntN(20)) // many ties
			all = append(all, Hit{Index: int32(i), Score: v})
			h.Push(int32(i), v)
		}
		h.Push(999, float32(math.NaN()))
		SortHits(all)
		got := h.Results()
		if len(got) != k {
			t.Fatalf("k=%d: %d hits", k, len(got))
		}
		for i := range got {
			if got[i] != all[i] {
				t.Fatalf("k=%d rank %d: %v want %v", k, i, got[i], all[i])
			}
		}
	}
}

// TestFlatIPEqualsOfferingEveryScore checks the scan, which offers a heap
// only the scores keepMask (or scanTop in C) keeps, against offering every
// score in row order, on rows with many exact ties, NaN and infinite
// scores, over several blocks, workers, batches and k (0, a full heap,
// the most hits scanned in C and past it, more than n).
func TestFlatIPEqualsOfferingEveryScore(t *testing.T) {
	eachDotImpl(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 10))
		n, d := 6000, 20
		// 1,200 distinct rows, each at 5 random places: exact ties, and a
		// threshold that keeps rising across the blocks
		distinct := randMat(rng, 1200*d)
		order := rng.Perm(n)
		X := make([]float32, n*d)
		for r := 0; r < n; r++ {
			src := order[r] % 1200
			copy(X[r*d:(r+1)*d], distinct[src*d:(src+1)*d])
			switch rng.IntN(20) {
			case 0:
				X[r*d] = float32(math.NaN())
			case 1:
				X[r*d] = float32(math.Inf(-1))
			case 2:
				X[r*d] = float32(math.Inf(1))
			}
		}
		// the last two: the most hits kept in C (174 × 6,000 ≤ 2²⁰), and
		// one batch more, which takes the loop in Go
		var cases [][2]int // {nq, k}
		for _, nq := range []int{1, 3, 17, 40} {
			for _, k := range []int{0, 1, 10, 2000, n + 1} {
				cases = append(cases, [2]int{nq, k})
			}
		}
		cases = append(cases, [2]int{scanTopMaxHits / n, n}, [2]int{scanTopMaxHits/n + 1, n})
		Q := randMat(rng, (scanTopMaxHits/n+1)*d)
		for _, c := range cases {
			nq, k := c[0], c[1]
			for _, workers := range []int{1, 3} {
				got, err := FlatIP(context.Background(), X, n, d, Q, nq, k, workers)
				if err != nil {
					t.Fatal(err)
				}
				for q := 0; q < nq; q++ {
					want := offerEveryScore(X, n, d, Q[q*d:(q+1)*d], k)
					if len(got[q]) != len(want) {
						t.Fatalf("nq=%d k=%d workers=%d query %d: %d hits, want %d", nq, k, workers, q, len(got[q]), len(want))
					}
					for i := range want {
						if got[q][i] != want[i] {
							t.Fatalf("nq=%d k=%d workers=%d query %d rank %d: %+v, want %+v", nq, k, workers, q, i, got[q][i], want[i])
						}
					}
				}
			}
		}
	})
}

// offerEveryScore is the top k of q's scores, each offered to a TopK in row
// order.
func offerEveryScore(X []float32, n, d int, q []float32, k int) []Hit {
	scores := make([]float32, n)
	dotBlock(X, n, d, q, 1, scores)
	h := NewTopK(min(k, n))
	for r, v := range scores {
		h.Push(int32(r), v)
	}
	return h.Results()
}
