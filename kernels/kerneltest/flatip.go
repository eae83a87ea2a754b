package kerneltest

import (
	"errors"
	"math"
	"sort"

	"github.com/gleaner-rag/gleaner/engine"
)

// testFlatIP checks exact dense search against float64 dot products, with
// duplicated rows (exact ties: the lower row first), K beyond N (padding)
// and awkward sizes. Near-ties may swap in float32, so a rank passes when
// its score, and the reference score of the row returned, both match the
// reference score at that rank.
func testFlatIP(h *H) {
	for _, n := range Sizes {
		for _, d := range []int{1, 3, 17} {
			x := h.Rand(n * d)
			if n > 3 {
				copy(x[3*d:4*d], x[0:d]) // row 3 duplicates row 0: an exact tie
			}
			b := 3
			q := h.Rand(b * d)
			for _, k := range []int{1, 5, n + 2} {
				idx, sc := h.UpI32(make([]int32, b*k)), h.Poisoned(b*k)
				h.Must(h.B.FlatIP(engine.FlatIPOp{X: h.Up(x), Q: h.Up(q), N: n, D: d, B: b, K: k, OutIdx: idx, OutScore: sc}))
				gotI, err := engine.Download[int32](h.B, idx)
				h.Must(err)
				gotS := h.Down(sc)
				for r := 0; r < b; r++ {
					checkFlatRow(h, n, d, k, x, q[r*d:(r+1)*d], gotI[r*k:(r+1)*k], gotS[r*k:(r+1)*k])
				}
			}
		}
	}
}

func checkFlatRow(h *H, n, d, k int, x, q []float32, gotI []int32, gotS []float32) {
	h.Helper()
	ref := make([]float64, n)
	mag := make([]float64, n)
	order := make([]int, n)
	for i := range ref {
		order[i] = i
		for j := 0; j < d; j++ {
			ref[i] += float64(x[i*d+j]) * float64(q[j])
			mag[i] += math.Abs(float64(x[i*d+j]) * float64(q[j]))
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return ref[order[a]] > ref[order[b]] })
	for j := 0; j < k; j++ {
		if j >= n {
			if gotI[j] != -1 || !math.IsInf(float64(gotS[j]), -1) {
				h.Fatalf("flatip n=%d k=%d rank %d: (%d, %v), want padding (-1, -Inf)", n, k, j, gotI[j], gotS[j])
			}
			continue
		}
		want := ref[order[j]]
		tol := Tol(d, mag[order[j]])
		if gotI[j] < 0 || int(gotI[j]) >= n || math.Abs(float64(gotS[j])-want) > tol || math.Abs(ref[gotI[j]]-want) > tol {
			h.Fatalf("flatip n=%d d=%d k=%d rank %d: row %d score %v, want row %d score %v ± %.3g", n, d, k, j, gotI[j], gotS[j], order[j], want, tol)
		}
	}
	if n > 3 { // the exact tie between rows 0 and 3 keeps the lower row first
		p0, p3 := -1, -1
		for j := range min(k, n) {
			switch gotI[j] {
			case 0:
				p0 = j
			case 3:
				p3 = j
			}
		}
		if p3 >= 0 && (p0 < 0 || p0 > p3) {
			h.Fatalf("flatip n=%d d=%d k=%d: row 3 (a copy of row 0) ranked before row 0", n, d, k)
		}
	}
}

// testScoreRows checks engine.ScoreRows (the backend's RowScorer, or the
// one-row Gemm) against float64 dot products. A backend with a RowScorer
// must also give each row FlatIP's score bit for bit: a method mixing the
// two (hybrid's scores, vector's hits) then ranks one row the same way.
func testScoreRows(h *H) {
	for _, n := range append(Sizes, 1000) {
		for _, d := range []int{1, 3, 17, 256} {
			x, q := h.Rand(n*d), h.Rand(d)
			out := h.Poisoned(n)
			xb, qb := h.Up(x), h.Up(q)
			op := engine.ScoreRowsOp{X: xb, Q: qb, Out: out, N: n, D: d}
			own := false // the backend ran the op itself (it may decline)
			if rs, ok := h.B.(engine.RowScorer); ok {
				err := rs.ScoreRows(op)
				own = err == nil
				if !own && !errors.Is(err, engine.ErrNotImplemented) {
					h.Fatal(err)
				}
			}
			if !own {
				h.Must(engine.ScoreRows(h.B, op))
			}
			got := h.Down(out)
			want, tol := make([]float64, n), make([]float64, n)
			for i := range want {
				var mag float64
				for j := 0; j < d; j++ {
					want[i] += float64(x[i*d+j]) * float64(q[j])
					mag += math.Abs(float64(x[i*d+j]) * float64(q[j]))
				}
				tol[i] = Tol(d, mag)
			}
			h.Close(name("scorerows n=", n, " d=", d), got, want, tol...)
			if own {
				checkScoresAreFlatIPs(h, xb, qb, n, d, got)
			}
		}
	}
}

// checkScoresAreFlatIPs compares scores with FlatIP's over every row.
func checkScoresAreFlatIPs(h *H, xb, qb engine.Buffer, n, d int, scores []float32) {
	h.Helper()
	idx, sc := h.UpI32(make([]int32, n)), h.Poisoned(n)
	h.Must(h.B.FlatIP(engine.FlatIPOp{X: xb, Q: qb, N: n, D: d, B: 1, K: n, OutIdx: idx, OutScore: sc}))
	ids, err := engine.Download[int32](h.B, idx)
	h.Must(err)
	for r, s := range h.Down(sc) {
		if i := ids[r]; i < 0 || int(i) >= n || math.Float32bits(scores[i]) != math.Float32bits(s) {
			h.Fatalf("scorerows n=%d d=%d: row %d scores %v, FlatIP gave it %v", n, d, i, scores[max(0, min(int(i), n-1))], s)
		}
	}
}
