package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestEdgeAttentionRowTable checks that features given as a table with
// ERow give what the same features copied per edge give, on the SIMD and
// the Go paths alike, and that a row outside the table is refused.
func TestEdgeAttentionRowTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const n, heads, hd, rows = 40, 2, 12, 5
	d := heads * hd
	ptr := []int64{0}
	var src, erow []int32
	for i := 0; i < n; i++ {
		for range rng.IntN(9) {
			src = append(src, int32(rng.IntN(n)))
			erow = append(erow, int32(rng.IntN(rows)))
		}
		ptr = append(ptr, int64(len(src)))
	}
	vec := func(m int) []float32 {
		v := make([]float32, m)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	k, q, v, table := vec(n*d), vec(n*d), vec(n*d), vec(rows*d)
	perEdge := make([]float32, len(src)*d)
	for p, r := range erow {
		copy(perEdge[p*d:(p+1)*d], table[int(r)*d:])
	}
	want := make([]float32, n*d)
	if err := EdgeAttention(EdgeAttentionArgs{N: n, Heads: heads, HeadDim: hd, Ptr: ptr, Src: src, K: k, Q: q, V: v, E: perEdge, Out: want}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []struct {
		name string
		fn   func(*EdgeAttentionArgs, float32, []float32, int, int)
	}{{"selected", edgeAttendRange}, {"go", edgeAttendRangeGo}} {
		saved := edgeAttendRange
		edgeAttendRange = path.fn
		got := make([]float32, n*d)
		err := EdgeAttention(EdgeAttentionArgs{N: n, Heads: heads, HeadDim: hd, Ptr: ptr, Src: src, ERow: erow, K: k, Q: q, V: v, E: table, Out: got})
		edgeAttendRange = saved
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > 1e-5*math.Max(1, math.Abs(float64(want[i]))) {
				t.Fatalf("%s: out[%d] = %g with a row table, %g with per-edge copies", path.name, i, got[i], want[i])
			}
		}
	}
	erow[len(erow)-1] = rows
	if err := EdgeAttention(EdgeAttentionArgs{N: n, Heads: heads, HeadDim: hd, Ptr: ptr, Src: src, ERow: erow, K: k, Q: q, V: v, E: table, Out: make([]float32, n*d)}); err == nil {
		t.Fatal("a feature row outside the table was accepted")
	}
}
