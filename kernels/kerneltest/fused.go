package kerneltest

import (
	"errors"
	"math"
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
)

// subgraph returns a symmetric adjacency over m nodes (one entry per
// ordered pair, no self loops, some isolated nodes) and global degrees at
// least the local ones.
func (h *H) subgraph(m int) (ptr []int64, idx []int32, deg []float32) {
	adj := make([][]bool, m)
	for i := range adj {
		adj[i] = make([]bool, m)
	}
	for i := 0; i < m; i++ {
		for j := i + 1; j < m; j++ {
			if i%4 != 3 && j%4 != 3 && h.rng.IntN(4) == 0 { // nodes 3, 7, … isolated
				adj[i][j], adj[j][i] = true, true
			}
		}
	}
	ptr = []int64{0}
	for i := 0; i < m; i++ {
		local := 0
		for j := 0; j < m; j++ {
			if adj[i][j] {
				idx = append(idx, int32(j))
				local++
			}
		}
		ptr = append(ptr, int64(len(idx)))
		deg = append(deg, float32(local+h.rng.IntN(20)+1))
	}
	return ptr, idx, deg
}

func refSmooth(m, d int, ptr []int64, idx []int32, deg []float32, hm []float32, alpha float64, keep bool) []float64 {
	out := make([]float64, m*d)
	for i := 0; i < m; i++ {
		var z float64
		for p := ptr[i]; p < ptr[i+1]; p++ {
			z += 1 / float64(deg[idx[p]])
		}
		for c := 0; c < d; c++ {
			var ph float64
			for p := ptr[i]; p < ptr[i+1]; p++ {
				ph += (1 / float64(deg[idx[p]])) / z * float64(hm[int(idx[p])*d+c])
			}
			if ptr[i] == ptr[i+1] && keep {
				ph = float64(hm[i*d+c])
			}
			out[i*d+c] = (1-alpha)*float64(hm[i*d+c]) + alpha*ph
		}
	}
	return out
}

func smoothCases(h *H, b engine.Backend, label string) {
	for _, m := range Sizes {
		for _, keep := range []bool{false, true} {
			d := 17
			ptr, idx, deg := h.subgraph(m)
			hm := h.Rand(m * d)
			out := h.Poisoned(m * d)
			h.Must(engine.Smooth(b, engine.SmoothOp{M: m, D: d, AdjPtr: ptr, AdjIdx: idx, Deg: deg, H: h.Up(hm), Out: out, Alpha: 0.2, KeepIsolated: keep}))
			h.Close(name(label, " smooth m=", m, " keep=", keep), h.Down(out), refSmooth(m, d, ptr, idx, deg, hm, 0.2, keep), Tol(m, 8))
		}
	}
}

func testSmooth(h *H) { smoothCases(h, h.B, "fused") }

func refLowRank(l, de, r, dkv int, m, g, b, a, bm []float32) []float64 {
	ln := refLayerNorm(m, g, b, l, de, 1e-5)
	mid := make([]float64, l*r)
	for i := 0; i < l; i++ {
		for j := 0; j < r; j++ {
			for p := 0; p < de; p++ {
				mid[i*r+j] += ln[i*de+p] * float64(a[p*r+j])
			}
		}
	}
	out := make([]float64, l*dkv)
	for i := 0; i < l; i++ {
		for j := 0; j < dkv; j++ {
			for p := 0; p < r; p++ {
				out[i*dkv+j] += mid[i*r+p] * float64(bm[p*dkv+j])
			}
		}
	}
	return out
}

func lowRankCases(h *H, b engine.Backend, label string) {
	for _, c := range [][4]int{{1, 3, 1, 1}, {17, 64, 8, 33}, {129, 17, 3, 17}} {
		l, de, r, dkv := c[0], c[1], c[2], c[3]
		m, g, bb, a, bm := h.Rand(l*de), h.Rand(de), h.Rand(de), h.Rand(de*r), h.Rand(r*dkv)
		out := h.Poisoned(l * dkv)
		h.Must(engine.LowRankProject(b, engine.LowRankOp{L: l, De: de, R: r, Dkv: dkv, M: h.Up(m), Gamma: h.Up(g), Beta: h.Up(bb),
			A: h.Up(a), B: h.Up(bm), Out: out, Eps: 1e-5}))
		h.Close(name(label, " low-rank ", c), h.Down(out), refLowRank(l, de, r, dkv, m, g, bb, a, bm), Tol(de*r, 30))
	}
}

func testLowRank(h *H) { lowRankCases(h, h.B, "fused") }

func refJoint(n, lm, lt, d, dv int, q, km, vm, kt, vt []float32, causal bool) []float64 {
	out := make([]float64, n*dv)
	for i := 0; i < n; i++ {
		var s []float64
		var vals [][]float32
		for j := 0; j < lm; j++ {
			s, vals = append(s, dot64(q[i*d:(i+1)*d], km[j*d:(j+1)*d])/math.Sqrt(float64(d))), append(vals, vm[j*dv:(j+1)*dv])
		}
		for j := 0; j < lt; j++ {
			if causal && j > i+lt-n {
				continue
			}
			s, vals = append(s, dot64(q[i*d:(i+1)*d], kt[j*d:(j+1)*d])/math.Sqrt(float64(d))), append(vals, vt[j*dv:(j+1)*dv])
		}
		m, z := math.Inf(-1), 0.0
		for _, x := range s {
			m = math.Max(m, x)
		}
		for j := range s {
			s[j] = math.Exp(s[j] - m)
			z += s[j]
		}
		for j := range s {
			for c := 0; c < dv; c++ {
				out[i*dv+c] += s[j] / z * float64(vals[j][c])
			}
		}
	}
	return out
}

func dot64(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func jointCases(h *H, b engine.Backend, label string) {
	for _, c := range [][5]int{{1, 3, 1, 8, 8}, {3, 17, 5, 16, 8}, {5, 0, 17, 8, 3}, {17, 129, 17, 32, 16}} {
		n, lm, lt, d, dv := c[0], c[1], c[2], c[3], c[4]
		for _, causal := range []bool{false, true} {
			q, km, vm, kt, vt := h.Rand(n*d), h.Rand(lm*d+1), h.Rand(lm*dv+1), h.Rand(lt*d), h.Rand(lt*dv)
			out := h.Poisoned(n * dv)
			h.Must(engine.JointAttention(b, engine.JointAttentionOp{N: n, Lm: lm, Lt: lt, D: d, Dv: dv, Q: h.Up(q), KMem: h.Up(km), VMem: h.Up(vm),
				KText: h.Up(kt), VText: h.Up(vt), Out: out, Causal: causal}))
			h.Close(name(label, " joint attention ", c, " causal=", causal), h.Down(out), refJoint(n, lm, lt, d, dv, q, km, vm, kt, vt, causal), Tol(d+lm+lt, 16))
		}
	}
}

func testJointAttention(h *H) { jointCases(h, h.B, "fused"); jointHeadCases(h, h.B, "fused") }

// jointHeadCases read one head of row-major multi-head buffers, as a
// grouped-query decoder does: queries [n, heads·d], memory and text keys
// and values [len, kvHeads·d]; each query head h uses kv head h/(heads/kv).
// The other heads' columns of Out must stay as they were.
func jointHeadCases(h *H, b engine.Backend, label string) {
	const heads, kv, d = 4, 2, 8
	for _, c := range [][3]int{{1, 5, 3}, {3, 0, 7}, {6, 9, 6}} {
		n, lm, lt := c[0], c[1], c[2]
		q, km, vm, kt, vt := h.Rand(n*heads*d), h.Rand(max(lm, 1)*kv*d), h.Rand(max(lm, 1)*kv*d), h.Rand(lt*kv*d), h.Rand(lt*kv*d)
		out := h.Poisoned(n * heads * d)
		for head := 0; head < heads; head++ {
			g := head / (heads / kv)
			h.Must(engine.JointAttention(b, engine.JointAttentionOp{N: n, Lm: lm, Lt: lt, D: d, Dv: d, Causal: true,
				Q: h.Up(q), KMem: h.Up(km), VMem: h.Up(vm), KText: h.Up(kt), VText: h.Up(vt), Out: out,
				OffQ: head * d, OffKMem: g * d, OffVMem: g * d, OffKText: g * d, OffVText: g * d, OffOut: head * d,
				LDQ: heads * d, LDKMem: kv * d, LDVMem: kv * d, LDKText: kv * d, LDVText: kv * d, LDOut: heads * d}))
		}
		got := h.Down(out)
		for head := 0; head < heads; head++ {
			g := head / (heads / kv)
			col := func(x []float32, rows, ld, off int) []float32 {
				var y []float32
				for r := 0; r < rows; r++ {
					y = append(y, x[r*ld+off:r*ld+off+d]...)
				}
				return y
			}
			want := refJoint(n, lm, lt, d, d, col(q, n, heads*d, head*d), col(km, lm, kv*d, g*d), col(vm, lm, kv*d, g*d),
				col(kt, lt, kv*d, g*d), col(vt, lt, kv*d, g*d), true)
			h.Close(name(label, " joint attention head ", head, " of ", c), col(got, n, heads*d, head*d), want, Tol(d+lm+lt, 16))
		}
	}
}

// bare hides a backend's fused ops and epilogue, forcing the engine's
// composed fallbacks.
type bare struct{ engine.Backend }

func (bare) Smooth(engine.SmoothOp) error                 { return engine.ErrNotImplemented }
func (bare) LowRankProject(engine.LowRankOp) error        { return engine.ErrNotImplemented }
func (bare) JointAttention(engine.JointAttentionOp) error { return engine.ErrNotImplemented }
func (bare) GAT(engine.GATOp) error                       { return engine.ErrNotImplemented }

// Gemm refuses epilogues, as a backend without them does.
func (b bare) Gemm(op engine.GemmOp) error {
	if op.Bias != nil || op.Act != engine.ActNone {
		return engine.ErrNotImplemented
	}
	return b.Backend.Gemm(op)
}

func testComposed(h *H) {
	b := bare{h.B}
	smoothCases(h, b, "composed")
	lowRankCases(h, b, "composed")
	jointCases(h, b, "composed")
	jointHeadCases(h, b, "composed")
	gatCases(h, b, "composed")
	m, n, k := 3, 17, 5
	a, bm, bias := h.Rand(m*k), h.Rand(k*n), h.Rand(n)
	c := h.Poisoned(m * n)
	h.Must(engine.GemmFused(b, engine.GemmOp{M: m, N: n, K: k, Alpha: 1, A: h.Up(a), B: h.Up(bm), C: c, Bias: h.Up(bias), Act: engine.ActTanh}))
	want, mag := refGemm(false, false, m, n, k, 1, a, k, bm, n, 0, nil, n)
	for i := range want {
		want[i] = math.Tanh(want[i] + float64(bias[i%n]))
		mag[i] = Tol(k+1, mag[i]+1)
	}
	h.Close("composed gemm+bias+tanh", h.Down(c), want, mag...)
}

// testBadInputs runs each bad call as its own subtest that recovers from a
// panic, so one crashing case names itself and the others still run.
func testBadInputs(h *H) {
	f := h.Up(h.Rand(4))
	i := h.UpI32([]int32{0, 1})
	cases := []struct {
		what string
		call func() error
	}{
		{"gemm short C", func() error {
			return h.B.Gemm(engine.GemmOp{M: 2, N: 2, K: 1, Alpha: 1, A: f, B: f, C: h.Up(make([]float32, 3))})
		}},
		{"gemm int buffer", func() error { return h.B.Gemm(engine.GemmOp{M: 1, N: 1, K: 1, Alpha: 1, A: i, B: f, C: f}) }},
		{"layernorm short", func() error {
			return h.B.LayerNorm(engine.LayerNormOp{X: f, Gamma: f, Beta: f, Out: f, Rows: 2, Cols: 4})
		}},
		{"attention bad length", func() error {
			return h.B.Attention(engine.AttentionOp{Batch: 1, Seq: 1, Heads: 1, HeadDim: 4, Q: f, K: f, V: f, Out: f, Lengths: h.UpI32([]int32{2})})
		}},
		{"spmm column range", func() error {
			return h.B.SpMM(engine.SpMMOp{Rows: 1, Cols: 1, D: 1, Ptr: h.UpI64([]int64{0, 2}), Idx: i, X: f, Y: f})
		}},
		{"edge source range", func() error {
			return h.B.EdgeAttention(engine.EdgeAttentionOp{N: 1, Heads: 1, HeadDim: 1, Ptr: h.UpI64([]int64{0, 2}), Src: i, K: f, Q: f, V: f, E: f, Out: f})
		}},
		{"edge feature row range", func() error {
			return h.B.EdgeAttention(engine.EdgeAttentionOp{N: 2, Heads: 1, HeadDim: 1, Ptr: h.UpI64([]int64{0, 1, 2}), Src: i, ERow: h.UpI32([]int32{0, 4}), K: f, Q: f, V: f, E: f, Out: f})
		}},
		{"batched gemm overlapping outputs", func() error {
			return h.B.BatchedGemm(engine.GemmOp{M: 2, N: 1, K: 1, Alpha: 1, A: f, B: f, C: f}, 2, 1, 0, 1)
		}},
		{"batched gemm stride overflow", func() error {
			return h.B.BatchedGemm(engine.GemmOp{M: 1, N: 1, K: 1, Alpha: 1, A: f, B: f, C: f}, 4, math.MaxInt/3+1, 0, 1)
		}},
		{"edge attention width overflow", func() error {
			return h.B.EdgeAttention(engine.EdgeAttentionOp{N: 1, Heads: 1 << 16, HeadDim: 1 << 16, Ptr: h.UpI64([]int64{0, 0}), Src: i, K: f, Q: f, V: f, E: f, Out: f})
		}},
		{"copy rows in place", func() error {
			return h.B.CopyRows(engine.CopyRowsOp{N: 1, Cols: 1, X: f, Out: f, Src: h.UpI32([]int32{1}), Dst: h.UpI32([]int32{0})})
		}},
		{"mul short", func() error { return h.B.Mul(engine.MulOp{N: 5, X: f, Y: f, Out: f}) }},
		{"copy rows source range", func() error {
			return h.B.CopyRows(engine.CopyRowsOp{N: 1, Cols: 2, X: f, Out: f, Src: h.UpI32([]int32{2})})
		}},
		{"copy rows duplicate destination", func() error {
			return h.B.CopyRows(engine.CopyRowsOp{N: 2, Cols: 1, X: f, Out: f, Dst: h.UpI32([]int32{1, 1})})
		}},
		{"edge message source range", func() error {
			return h.B.EdgeMessage(engine.EdgeMessageOp{N: 1, D: 1, Rows: 1, Ptr: h.UpI64([]int64{0, 2}), Src: i, ERow: h.UpI32([]int32{0, 0}), M: f, F: f, Out: f})
		}},
		{"edge message negative row", func() error {
			return h.B.EdgeMessage(engine.EdgeMessageOp{N: 2, D: 1, Rows: 1, Ptr: h.UpI64([]int64{0, 1, 2}), Src: i, ERow: h.UpI32([]int32{0, -1}), M: f, F: f, Out: f})
		}},
		{"smooth zero degree", func() error {
			return engine.Smooth(h.B, engine.SmoothOp{M: 2, D: 1, AdjPtr: []int64{0, 1, 2}, AdjIdx: []int32{1, 0}, Deg: []float32{1, 0}, H: f, Out: f, Alpha: 0.2})
		}},
		{"alloc negative", func() error { _, err := h.B.Alloc(engine.F32, -1); return err }},
		{"alloc huge", func() error { _, err := h.B.Alloc(engine.F32, math.MaxInt); return err }},
		{"alloc unknown dtype", func() error { _, err := h.B.Alloc(engine.DType(99), 1); return err }},
		{"joint no keys", func() error {
			return engine.JointAttention(h.B, engine.JointAttentionOp{N: 1, D: 1, Dv: 1, Q: f, KMem: f, VMem: f, KText: f, VText: f, Out: f})
		}},
	}
	for _, c := range cases {
		h.Run(c.what, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: panicked instead of returning an error: %v", c.what, r)
				}
			}()
			err := c.call()
			switch {
			case errors.Is(err, engine.ErrNotImplemented):
				t.Skipf("%s: %v", c.what, err)
			case err == nil:
				t.Errorf("%s: accepted", c.what)
			}
		})
	}
}

// refGAT is one GAT head in float64: softmax over LeakyReLU(s_i0 + s_j1) of
// node i itself and its distinct neighbours.
func refGAT(n, d int, ptr []int64, idx []int32, hm, s []float32, slope float64) []float64 {
	out := make([]float64, n*d)
	for i := 0; i < n; i++ {
		nb := map[int]bool{i: true}
		for p := ptr[i]; p < ptr[i+1]; p++ {
			nb[int(idx[p])] = true
		}
		w, z := map[int]float64{}, 0.0
		for j := range nb {
			x := float64(s[2*i]) + float64(s[2*j+1])
			if x < 0 {
				x *= slope
			}
			w[j] = math.Exp(x)
			z += w[j]
		}
		for j := range nb {
			for c := 0; c < d; c++ {
				out[i*d+c] += w[j] / z * float64(hm[j*d+c])
			}
		}
	}
	return out
}

func gatCases(h *H, b engine.Backend, label string) {
	for _, m := range []int{1, 5, 17} {
		d := 9
		ptr, idx, _ := h.subgraph(m)
		if m > 2 { // a listed self loop must not count twice
			idx = append(idx, 0)
			for i := 1; i <= m; i++ {
				ptr[i]++
			}
			copy(idx[ptr[0]+1:], idx[ptr[0]:len(idx)-1])
			idx[0] = 0
		}
		hm, s := h.Rand(m*d), h.Rand(2*m)
		out := h.Poisoned(m * d)
		h.Must(engine.GAT(b, engine.GATOp{N: m, D: d, AdjPtr: ptr, AdjIdx: idx, H: h.Up(hm), S: h.Up(s), Out: out, Slope: 0.2}))
		h.Close(name(label, " gat m=", m), h.Down(out), refGAT(m, d, ptr, idx, hm, s, 0.2), Tol(m, 8))
	}
}

func testGAT(h *H) { gatCases(h, h.B, "fused") }
