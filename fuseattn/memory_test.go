package fuseattn

import (
	"context"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
)

// fakeEncoder gives each text 1–4 seeded random token states.
type fakeEncoder struct {
	d     int
	calls int
}

func (e *fakeEncoder) Name() string { return "fake" }
func (e *fakeEncoder) Dim() int     { return e.d }
func (e *fakeEncoder) States(_ context.Context, texts []string) ([][]float32, error) {
	e.calls++
	out := make([][]float32, len(texts))
	for i, t := range texts {
		h := fnv.New64a()
		h.Write([]byte(t))
		rng := rand.New(rand.NewPCG(h.Sum64(), 1))
		n := 1 + len(t)%4
		for j := 0; j < n*e.d; j++ {
			out[i] = append(out[i], float32(rng.NormFloat64()))
		}
	}
	return out, nil
}

func testConfig() AdapterConfig {
	return AdapterConfig{Encoder: EncoderLSA, Dim: 6, PoolDim: 4, GATLayers: 2, GATSlope: 0.2, Rank: 3, KVDim: 4,
		DecoderLayers: 3, MemoryLayers: []int{0, 2}, LayerNormEps: 1e-5}
}

// matT is x (rows × in) · Wᵀ (W out × in) in float64.
func matT(x []float64, rows, in int, w []float32, out int) []float64 {
	y := make([]float64, rows*out)
	for r := 0; r < rows; r++ {
		for o := 0; o < out; o++ {
			for i := 0; i < in; i++ {
				y[r*out+o] += x[r*in+i] * float64(w[o*in+i])
			}
		}
	}
	return y
}

func f64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// referenceMemory recomputes M_q and one layer's keys in float64.
func referenceMemory(cf AdapterConfig, w map[string][]float32, states [][]float32, adj [][]int, zq []float32, layer int) ([]float64, []float64) {
	d, a := cf.Dim, cf.PoolDim
	q := matT(f64(zq), 1, d, w["pool.q.weight"], a)
	k := len(states)
	pooled := make([]float64, k*d)
	var rows []float64
	for i, h := range states {
		t := len(h) / d
		hk := matT(f64(h), t, d, w["pool.k.weight"], a)
		s, top := make([]float64, t), math.Inf(-1)
		for j := 0; j < t; j++ {
			for c := 0; c < a; c++ {
				s[j] += hk[j*a+c] * q[c] / math.Sqrt(float64(a))
			}
			top = math.Max(top, s[j])
		}
		z := 0.0
		for j := range s {
			s[j] = math.Exp(s[j] - top)
			z += s[j]
		}
		for j := 0; j < t; j++ {
			for c := 0; c < d; c++ {
				pooled[i*d+c] += s[j] / z * float64(h[j*d+c])
			}
		}
		rows = append(rows, f64(h)...)
	}
	zv := matT(pooled, k, d, w["pool.v.weight"], d)
	x := zv
	for l := 0; l < cf.GATLayers; l++ {
		wh := make([]float64, k*d)
		copy(wh, matT(x, k, d, w[gatName(l, "weight")], d))
		att := w[gatName(l, "att")]
		next := make([]float64, k*d)
		for i := 0; i < k; i++ {
			nb := append([]int{i}, adj[i]...)
			e, z := make([]float64, len(nb)), 0.0
			for n, j := range nb {
				var sd, ss float64
				for c := 0; c < d; c++ {
					sd += float64(att[c]) * float64(float32(wh[i*d+c]))
					ss += float64(att[d+c]) * float64(float32(wh[j*d+c]))
				}
				v := sd + ss
				if v < 0 {
					v *= cf.GATSlope
				}
				e[n] = math.Exp(v)
				z += e[n]
			}
			for n, j := range nb {
				for c := 0; c < d; c++ {
					next[i*d+c] += e[n] / z * wh[j*d+c]
				}
			}
		}
		if l < cf.GATLayers-1 {
			for i, v := range next {
				next[i] = 0.5 * v * (1 + math.Erf(v/math.Sqrt2))
			}
		}
		x = next
	}
	for i := range x {
		rows = append(rows, zv[i]+x[i])
	}
	n := len(rows) / d
	ln := make([]float64, len(rows))
	for r := 0; r < n; r++ {
		mean, vr := 0.0, 0.0
		for c := 0; c < d; c++ {
			mean += rows[r*d+c] / float64(d)
		}
		for c := 0; c < d; c++ {
			vr += (rows[r*d+c] - mean) * (rows[r*d+c] - mean) / float64(d)
		}
		for c := 0; c < d; c++ {
			ln[r*d+c] = (rows[r*d+c]-mean)/math.Sqrt(vr+cf.LayerNormEps)*float64(w["memory.norm.weight"][c]) + float64(w["memory.norm.bias"][c])
		}
	}
	ka, kb := w[memName(layer, "k_a")], w[memName(layer, "k_b")]
	mid := make([]float64, n*cf.Rank)
	for r := 0; r < n; r++ {
		for j := 0; j < cf.Rank; j++ {
			for p := 0; p < d; p++ {
				mid[r*cf.Rank+j] += ln[r*d+p] * float64(ka[p*cf.Rank+j])
			}
		}
	}
	keys := make([]float64, n*cf.KVDim)
	for r := 0; r < n; r++ {
		for j := 0; j < cf.KVDim; j++ {
			for p := 0; p < cf.Rank; p++ {
				keys[r*cf.KVDim+j] += mid[r*cf.Rank+p] * float64(kb[p*cf.KVDim+j])
			}
		}
	}
	return rows, keys
}

func gatName(l int, s string) string { return "gat." + string(rune('0'+l)) + "." + s }
func memName(l int, s string) string { return "memory." + string(rune('0'+l)) + "." + s }

func TestMemoryMatchesReference(t *testing.T) {
	c := testConfig()
	tensors := RandomAdapters(c, 3)
	w := map[string][]float32{}
	for n, x := range tensors {
		w[n] = x.Data
	}
	enc := &fakeEncoder{d: c.Dim}
	f, err := NewFuser(c, tensors, cpu.New(), enc, NewStateCache(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	nodes := []int32{10, 11, 12, 13}
	texts := func(v int32) string { return []string{"alpha", "beta beta", "gamma is", "delta z"}[v-10] }
	adj := [][]int{{1}, {0, 2}, {1}, {}} // node 13 is isolated
	g := &graphops.Subgraph{Nodes: nodes, Ptr: []int64{0, 1, 3, 4, 4}, Idx: []int32{1, 0, 2, 1}}
	zq := []float32{0.3, -1, 0.5, 2, 0, -0.7}
	var first []float32
	for round := 0; round < 2; round++ {
		mem, st, err := f.Build(context.Background(), nodes, texts, g, zq)
		if err != nil {
			t.Fatal(err)
		}
		states, _ := enc.States(context.Background(), []string{texts(10), texts(11), texts(12), texts(13)})
		rows, keys := referenceMemory(c, w, states, adj, zq, 2)
		if st.Rows != len(rows)/c.Dim {
			t.Fatalf("memory has %d rows, want %d", st.Rows, len(rows)/c.Dim)
		}
		got, err := engine.Download[float32](cpu.New(), mem.KV.K[2])
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range keys {
			if math.Abs(float64(got[i])-want) > 1e-4*(1+math.Abs(want)) {
				t.Fatalf("round %d: layer-2 key %d = %v, reference %v", round, i, got[i], want)
			}
		}
		if mem.KV.K[1] != nil || mem.KV.V[0] == nil {
			t.Fatal("memory must exist for layers 0 and 2 only")
		}
		if round == 0 {
			first = got
			if st.Encoded != 4 || st.Cached != 0 {
				t.Fatalf("first build: %+v", st)
			}
		} else if st.Cached != 4 || st.Encoded != 0 || enc.calls != 3 { // 2 calls here for the reference
			t.Fatalf("second build must come from the cache: %+v, encoder calls %d", st, enc.calls)
		} else {
			for i := range got {
				if got[i] != first[i] {
					t.Fatal("cached states changed the memory")
				}
			}
		}
		mem.Free()
	}
}

func TestStateCacheEvictsLeastRecent(t *testing.T) {
	c := NewStateCache(3 * 4 * 2) // room for three 2-value states
	for v := int32(0); v < 3; v++ {
		c.Put(v, []float32{1, 2})
	}
	c.Get(0) // 1 is now the least recent
	c.Put(3, []float32{1, 2})
	if _, ok := c.Get(1); ok {
		t.Error("the least recently used entry survived")
	}
	for _, v := range []int32{0, 2, 3} {
		if _, ok := c.Get(v); !ok {
			t.Errorf("entry %d evicted", v)
		}
	}
	c.Put(9, make([]float32, 100)) // larger than the budget: not kept
	if st := c.Stats(); st.Entries != 3 || st.Bytes != 24 {
		t.Errorf("stats %+v", st)
	}
}

func TestAdapterConfigErrors(t *testing.T) {
	c := testConfig()
	c.MemoryLayers = []int{2, 1}
	c.Encoder = "bert"
	if err := c.Validate(); err == nil {
		t.Fatal("bad config accepted")
	}
	good := testConfig()
	tensors := RandomAdapters(good, 1)
	delete(tensors, "gat.1.att")
	if _, err := NewFuser(good, tensors, cpu.New(), &fakeEncoder{d: 6}, nil); err == nil {
		t.Error("missing tensor accepted")
	}
	if _, err := NewFuser(good, RandomAdapters(good, 1), cpu.New(), &fakeEncoder{d: 5}, nil); err == nil {
		t.Error("encoder width mismatch accepted")
	}
	if got := DefaultMemoryLayers(16, 4); len(got) != 4 || got[0] != 0 || got[3] != 15 {
		t.Errorf("default memory layers %v", got)
	}
}
