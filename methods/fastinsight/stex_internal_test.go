package fastinsight

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/gleaner-rag/gleaner/graphops"
)

// stexBySort is STeX as first written: every candidate scored through
// maps, then the whole list sorted (equal scores by I_sim, then node
// number). stex must return its first want.
func stexBySort(adj *graphops.Adjacency, ret []int32, sim []float32, beta float64) []int32 {
	rank, in := map[int32]int{}, map[int32]bool{}
	for r, v := range ret {
		rank[v], in[v] = r+1, true
	}
	type cand struct {
		best, count int
		last        int32
	}
	cands := map[int32]*cand{}
	for _, u := range ret {
		for p := adj.Ptr[u]; p < adj.Ptr[u+1]; p++ {
			n := adj.Idx[p]
			if in[n] {
				continue
			}
			c := cands[n]
			if c == nil {
				c = &cand{best: rank[u], last: -1}
				cands[n] = c
			}
			c.best = min(c.best, rank[u])
			if c.last != u {
				c.count, c.last = c.count+1, u
			}
		}
	}
	type scored struct {
		v        int32
		str, sim float64
	}
	var list []scored
	rmax := len(ret)
	for v, c := range cands {
		var istr float64
		if rmax > 1 {
			istr = 1 - float64(c.best-1)/float64(rmax-1)
		}
		if cmax := min(int(adj.Ptr[v+1]-adj.Ptr[v]), rmax); cmax > 1 {
			istr += float64(c.count-1) / float64(cmax-1)
		}
		list = append(list, scored{v, istr, float64(sim[v])})
	}
	key := func(s scored) (float64, float64) {
		if math.IsInf(beta, 1) {
			return s.str, s.sim
		}
		return s.sim + beta*s.str, s.sim
	}
	slices.SortFunc(list, func(a, b scored) int {
		a1, a2 := key(a)
		b1, b2 := key(b)
		switch {
		case a1 != b1:
			return cmpDesc(a1, b1)
		case a2 != b2:
			return cmpDesc(a2, b2)
		}
		return int(a.v - b.v)
	})
	out := make([]int32, len(list))
	for i, s := range list {
		out[i] = s.v
	}
	return out
}

func cmpDesc(a, b float64) int {
	if a > b {
		return -1
	}
	return 1
}

// randomAdjacency is an undirected view (every edge in both ends' rows,
// as graphops.Adjacency promises) of n vertices: vertex v draws about deg
// edges, vertices below n/20 20× as many (hubs), with repeated edges and
// self-loops.
func randomAdjacency(r *rand.Rand, n, deg int) *graphops.Adjacency {
	rows := make([][]int32, n)
	for v := range n {
		d := r.IntN(deg + 1)
		if v < n/20 {
			d *= 20
		}
		for range d {
			u := r.IntN(n)
			rows[v] = append(rows[v], int32(u))
			rows[u] = append(rows[u], int32(v))
		}
	}
	adj := &graphops.Adjacency{Ptr: make([]int64, n+1)}
	for v, row := range rows {
		adj.Idx = append(adj.Idx, row...)
		adj.Ptr[v+1] = int64(len(adj.Idx))
	}
	return adj
}

// TestSTeXEqualsFullSort runs queries as RetrieveStream does: rounds
// that add nodes to N_ret and reorder it (GRanker), with STeX asked for
// several batch sizes each round, against the full sort. Sims are coarse
// (many ties), negative (cosines) or tiny (S rounds distinct sims equal).
func TestSTeXEqualsFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 29))
	var m fastInsight
	for trial := range 300 {
		n := []int{60, 150, 300}[r.IntN(3)] // few sizes: the pooled arrays are reused, stale entries and all
		adj := randomAdjacency(r, n, 1+r.IntN(8))
		sim := make([]float32, n)
		for i := range sim {
			switch trial % 3 {
			case 0:
				sim[i] = float32(r.IntN(5)) / 4
			case 1:
				sim[i] = float32(r.IntN(9)-4) / 4
			default:
				sim[i] = float32(r.IntN(4)) * 1e-17
			}
		}
		m.o.Beta = []float64{0, 0.5, 1, math.Inf(1)}[trial%4]
		st := &fiState{adj: adj, sim: sim, nb: m.nbs.get(n)}
		order := r.Perm(n)
		for round := 0; len(order) > 0 && round < 8; round++ {
			add := 1 + r.IntN(min(len(order), 12))
			for _, v := range order[:add] {
				st.retrieve(int32(v))
			}
			order = order[add:]
			r.Shuffle(len(st.ret), func(i, j int) { st.ret[i], st.ret[j] = st.ret[j], st.ret[i] })
			if got, want := st.nb.induced(adj, st.ret), graphops.InducedAdj(adj, st.ret); !reflect.DeepEqual(got, want) {
				t.Fatalf("trial %d round %d: induced subgraph %+v, InducedAdj %+v", trial, round, got, want)
			}
			want := stexBySort(adj, st.ret, sim, m.o.Beta)
			for _, k := range []int{1, 3, 10, len(want) + 1} {
				if got := m.stex(st, k); !slices.Equal(got, want[:min(k, len(want))]) {
					t.Fatalf("trial %d round %d, β %v, want %d: stex %v, full sort %v", trial, round, m.o.Beta, k, got, want[:min(k, len(want))])
				}
			}
		}
		nb := st.nb
		m.nbs.put(nb)
		if slices.ContainsFunc(nb.count, func(x int32) bool { return x != 0 }) {
			t.Fatalf("trial %d: counts not cleared on put", trial)
		}
	}
}
