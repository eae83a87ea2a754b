package kerneltest

import (
	"math"

	"github.com/gleaner-rag/gleaner/engine"
)

// randCSR returns a random rows×cols CSR with some empty rows.
func (h *H) randCSR(rows, cols, maxDeg int) (ptr []int64, idx []int32, val []float32) {
	ptr = []int64{0}
	for i := 0; i < rows; i++ {
		deg := h.rng.IntN(maxDeg + 1)
		if i%5 == 1 {
			deg = 0
		}
		for j := 0; j < deg; j++ {
			idx = append(idx, int32(h.rng.IntN(cols)))
			val = append(val, float32(h.rng.NormFloat64()))
		}
		ptr = append(ptr, int64(len(idx)))
	}
	return ptr, idx, val
}

func testSpMM(h *H) {
	for _, rows := range Sizes {
		for _, d := range []int{1, 3, 17, 64} {
			cols := rows + 2
			ptr, idx, val := h.randCSR(rows, cols, 7)
			x := h.Rand(cols * d)
			for _, ones := range []bool{false, true} {
				vb := h.Up(append(val, 0))
				if ones {
					vb = nil
				}
				y := h.Poisoned(rows * d)
				h.Must(h.B.SpMM(engine.SpMMOp{Rows: rows, Cols: cols, D: d, Ptr: h.UpI64(ptr), Idx: h.UpI32(append(idx, 0)), Val: vb, X: h.Up(x), Y: y}))
				want, mag := make([]float64, rows*d), make([]float64, rows*d)
				for i := 0; i < rows; i++ {
					for p := ptr[i]; p < ptr[i+1]; p++ {
						w := 1.0
						if !ones {
							w = float64(val[p])
						}
						for j := 0; j < d; j++ {
							want[i*d+j] += w * float64(x[int(idx[p])*d+j])
							mag[i*d+j] += math.Abs(w * float64(x[int(idx[p])*d+j]))
						}
					}
				}
				tol := make([]float64, len(mag))
				for i := range mag {
					tol[i] = Tol(8, mag[i])
				}
				h.Close(name("spmm ", rows, "×", cols, "·", d, " ones=", ones), h.Down(y), want, tol...)
			}
		}
	}
}

// refEdgeAttention: edge p reads feature row erow[p] of e (p when erow is
// nil).
func refEdgeAttention(n, heads, hd int, ptr []int64, src, erow []int32, k, q, v, e []float32) []float64 {
	d := heads * hd
	out := make([]float64, n*d)
	for i := 0; i < n; i++ {
		for hh := 0; hh < heads; hh++ {
			var z float64
			num := make([]float64, hd)
			for p := ptr[i]; p < ptr[i+1]; p++ {
				s, r := int(src[p]), int(p)
				if erow != nil {
					r = int(erow[p])
				}
				var logit float64
				for j := 0; j < hd; j++ {
					c := hh*hd + j
					logit += float64(k[s*d+c]) * float64(q[i*d+c]) / math.Sqrt(float64(hd)) * float64(e[r*d+c])
				}
				w := math.Exp(math.Min(math.Max(logit, -5), 5))
				z += w
				for j := 0; j < hd; j++ {
					num[j] += w * float64(v[s*d+hh*hd+j])
				}
			}
			for j := 0; j < hd; j++ {
				out[i*d+hh*hd+j] = num[j] / (z + 1e-6)
			}
		}
	}
	return out
}

func testEdgeAttention(h *H) {
	for _, n := range Sizes {
		for _, c := range [][2]int{{1, 4}, {2, 8}, {3, 5}} {
			heads, hd := c[0], c[1]
			d := heads * hd
			ptr, src, _ := h.randCSR(n, n, 9)
			k, q, v, e := h.Rand(n*d), h.Rand(n*d), h.Rand(n*d), h.Rand(len(src)*d+1)
			out := h.Poisoned(n * d)
			h.Must(h.B.EdgeAttention(engine.EdgeAttentionOp{N: n, Heads: heads, HeadDim: hd, Ptr: h.UpI64(ptr), Src: h.UpI32(append(src, 0)),
				K: h.Up(k), Q: h.Up(q), V: h.Up(v), E: h.Up(e), Out: out}))
			want := refEdgeAttention(n, heads, hd, ptr, src, nil, k, q, v, e)
			h.Close(name("edge attention n=", n, " heads=", heads, " hd=", hd), h.Down(out), want, Tol(64, 16))
			// a feature table of 4 rows shared by the edges (SeedER's relations)
			erow := make([]int32, len(src)+1)
			for p := range src {
				erow[p] = int32(h.rng.IntN(4))
			}
			table := h.Rand(4 * d)
			out = h.Poisoned(n * d)
			h.Must(h.B.EdgeAttention(engine.EdgeAttentionOp{N: n, Heads: heads, HeadDim: hd, Ptr: h.UpI64(ptr), Src: h.UpI32(append(src, 0)),
				ERow: h.UpI32(erow), K: h.Up(k), Q: h.Up(q), V: h.Up(v), E: h.Up(table), Out: out}))
			want = refEdgeAttention(n, heads, hd, ptr, src, erow, k, q, v, table)
			h.Close(name("edge attention (row table) n=", n, " heads=", heads, " hd=", hd), h.Down(out), want, Tol(64, 16))
		}
	}
}

func testTopK(h *H) {
	rows, cols := 5, 129
	s := h.Rand(rows * cols)
	for j := 0; j < cols; j++ {
		s[cols+j] = float32(j % 4) // row 1: many ties
	}
	s[2*cols+5] = float32(math.NaN())
	for _, k := range []int{1, 3, 17, 200} {
		idx, sc := h.UpI32(make([]int32, rows*k)), h.Poisoned(rows*k)
		h.Must(h.B.TopK(engine.TopKOp{Scores: h.Up(s), Rows: rows, Cols: cols, K: k, OutIdx: idx, OutScore: sc}))
		gotI, err := engine.Download[int32](h.B, idx)
		h.Must(err)
		gotS := h.Down(sc)
		for r := 0; r < rows; r++ {
			want := refTopK(s[r*cols:(r+1)*cols], k)
			for j := 0; j < k; j++ {
				wi, ws := int32(-1), math.Inf(-1)
				if j < len(want) {
					wi, ws = int32(want[j]), float64(s[r*cols+want[j]])
				}
				if gotI[r*k+j] != wi || float64(gotS[r*k+j]) != ws {
					h.Fatalf("topk k=%d row %d rank %d: (%d, %v), want (%d, %v)", k, r, j, gotI[r*k+j], gotS[r*k+j], wi, ws)
				}
			}
		}
	}
}

// refTopK sorts column ids by score descending, then id, skipping NaN.
func refTopK(s []float32, k int) []int {
	var ids []int
	for j, v := range s {
		if !math.IsNaN(float64(v)) {
			ids = append(ids, j)
		}
	}
	for i := 1; i < len(ids); i++ { // insertion sort: clear and stable
		for j := i; j > 0 && (s[ids[j]] > s[ids[j-1]]); j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
	return ids[:min(k, len(ids))]
}

func testEdgeMessage(h *H) {
	for _, n := range Sizes {
		for _, d := range []int{1, 8, 33} {
			rows := 5
			ptr, src, _ := h.randCSR(n, n, 9)
			erow := make([]int32, len(src)+1)
			for p := range src {
				erow[p] = int32(h.rng.IntN(rows + 2)) // rows 5 and 6: no message
			}
			m, f := h.Rand(n*d), h.Rand((rows+2)*d) // F's rows past Rows hold data that must not be read
			out := h.Poisoned(n * d)
			h.Must(h.B.EdgeMessage(engine.EdgeMessageOp{N: n, D: d, Rows: rows, Ptr: h.UpI64(ptr), Src: h.UpI32(append(src, 0)), ERow: h.UpI32(erow),
				M: h.Up(m), F: h.Up(f), Out: out}))
			want, tol := make([]float64, n*d), make([]float64, n*d)
			for i := 0; i < n; i++ {
				for p := ptr[i]; p < ptr[i+1]; p++ {
					if int(erow[p]) >= rows {
						continue
					}
					for j := 0; j < d; j++ {
						x := float64(m[int(src[p])*d+j]) * float64(f[int(erow[p])*d+j])
						want[i*d+j] += x
						tol[i*d+j] += math.Abs(x)
					}
				}
			}
			for i := range tol {
				tol[i] = Tol(10, tol[i])
			}
			h.Close(name("edge message n=", n, " d=", d), h.Down(out), want, tol...)
		}
	}
}
