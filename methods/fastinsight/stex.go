package fastinsight

import (
	"container/heap"
	"math"
	"slices"
	"sync"

	"github.com/gleaner-rag/gleaner/graphops"
)

// STeX (docs/methods.md §1.3) scores the unretrieved neighbours of N_ret
// every round. Walking every retrieved node's row each round costs ten
// times the neighbourhood per query, and a hub's row reaches 10⁴ nodes at
// 10⁶ passages. So the neighbourhood is kept as N_ret grows, and a round
// reads only what can rank: a candidate with one retrieved neighbour u
// has I_str = 1 − (rank(u)−1)/(|N_ret|−1) (its bridging term is 0), the
// same for all of u's such candidates, which therefore rank by I_sim: u
// keeps them in a queue by I_sim and a round reads its head. Candidates
// with two or more retrieved neighbours are few and scored one by one.

// retrieved marks a node of N_ret in neighbourhood.count.
const retrieved = -1

// neighbourhood is one query's view of N_ret's neighbours.
type neighbourhood struct {
	count []int32 // per node: retrieved, or its number of retrieved neighbours
	last  []int32 // per node counted: the last retrieved neighbour counted
	queue map[int32]*simQueue
	multi []int32           // the nodes that reached two retrieved neighbours
	nbrs  map[int32][]int32 // their retrieved neighbours
	links map[int32][]int32 // per retrieved node: its retrieved neighbours (GRanker's subgraph)
}

func (nb *neighbourhood) retrieved(v int32) bool { return nb.count[v] == retrieved }

// add retrieves v: it counts v for each of its neighbours and queues those
// it is the first retrieved neighbour of, by sim.
func (nb *neighbourhood) add(v int32, adj *graphops.Adjacency, sim []float32) {
	nb.count[v], nb.last[v] = retrieved, v // last may be stale from an earlier query
	q := &simQueue{sim: sim}
	for p := adj.Ptr[v]; p < adj.Ptr[v+1]; p++ {
		n := adj.Idx[p]
		switch c := nb.count[n]; {
		case c == retrieved && n != v && nb.last[n] != v: // last is free once n is retrieved
			nb.links[v] = append(nb.links[v], n)
			nb.links[n] = append(nb.links[n], v)
			nb.last[n] = v
		case c == retrieved || c > 0 && nb.last[n] == v: // v's row may list n twice: count v once
		case c == 0:
			q.heap = append(q.heap, n)
			nb.count[n], nb.last[n] = 1, v
		case c == 1:
			nb.multi = append(nb.multi, n)
			nb.nbrs[n] = []int32{nb.last[n], v}
			nb.count[n], nb.last[n] = 2, v
		default:
			nb.nbrs[n] = append(nb.nbrs[n], v)
			nb.count[n], nb.last[n] = c+1, v
		}
	}
	heap.Init(q)
	nb.queue[v] = q
}

// neighbourhoods pools the neighbourhoods' per-node arrays, sparing each
// query two allocations of N entries.
type neighbourhoods struct{ pool sync.Pool }

func (p *neighbourhoods) get(n int) *neighbourhood {
	nb, ok := p.pool.Get().(*neighbourhood)
	if !ok || len(nb.count) != n {
		nb = &neighbourhood{count: make([]int32, n), last: make([]int32, n)}
	}
	nb.queue, nb.nbrs, nb.links, nb.multi = map[int32]*simQueue{}, map[int32][]int32{}, map[int32][]int32{}, nil
	return nb
}

// put clears the counts of N_ret and its neighbours (last is read only
// where a count is set) and returns the arrays to the pool.
func (p *neighbourhoods) put(nb *neighbourhood) {
	for v, q := range nb.queue {
		nb.count[v] = 0
		for _, n := range q.heap {
			nb.count[n] = 0
		}
		for _, n := range q.taken {
			nb.count[n] = 0
		}
	}
	for _, n := range nb.multi {
		nb.count[n] = 0
	}
	nb.queue, nb.nbrs, nb.links, nb.multi = nil, nil, nil, nil
	p.pool.Put(nb)
}

// induced is graphops.InducedAdj(adj, nodes) for nodes that are N_ret in
// any order, from the links recorded as they were retrieved: each row is
// read once per query, not once per round.
func (nb *neighbourhood) induced(adj *graphops.Adjacency, nodes []int32) *graphops.Subgraph {
	local := make(map[int32]int32, len(nodes))
	for i, v := range nodes {
		local[v] = int32(i)
	}
	s := &graphops.Subgraph{Nodes: nodes, Ptr: make([]int64, 1, len(nodes)+1), Deg: make([]float32, len(nodes))}
	for i, v := range nodes {
		start := len(s.Idx)
		for _, u := range nb.links[v] {
			s.Idx = append(s.Idx, local[u])
		}
		slices.Sort(s.Idx[start:])
		s.Ptr = append(s.Ptr, int64(len(s.Idx)))
		s.Deg[i] = float32(adj.Ptr[v+1] - adj.Ptr[v])
	}
	return s
}

// stex returns the want best unretrieved neighbours of N_ret by STeX's
// score, best first: S = I_sim + β·I_str, with I_str the proximity to
// high-ranked retrieved neighbours plus the bridging term. β = +Inf ranks
// by I_str alone; equal scores rank by I_sim, then node number.
func (m *fastInsight) stex(st *fiState, want int) []int32 {
	if want <= 0 {
		return nil
	}
	nb, rmax := st.nb, len(st.ret)
	top := make([]stexScored, 0, want+1)
	rank := make(map[int32]int, rmax)
	for r, u := range st.ret {
		rank[u] = r + 1
		istr := proximity(r+1, rmax)
		top = nb.queue[u].best(nb, want, func(n int32) stexScored { return m.stexScore(n, istr, float64(st.sim[n])) }, top)
	}
	for _, n := range nb.multi {
		if nb.retrieved(n) {
			continue
		}
		best := rmax
		for _, u := range nb.nbrs[n] {
			best = min(best, rank[u])
		}
		istr := proximity(best, rmax)
		if cmax := min(int(st.adj.Ptr[n+1]-st.adj.Ptr[n]), rmax); cmax > 1 {
			istr += float64(nb.count[n]-1) / float64(cmax-1)
		}
		top = keepBest(top, want, m.stexScore(n, istr, float64(st.sim[n])))
	}
	out := make([]int32, len(top))
	for i, s := range top {
		out[i] = s.v
	}
	return out
}

// proximity is I_str's first term for a best retrieved neighbour at rank
// best of rmax.
func proximity(best, rmax int) float64 {
	if rmax > 1 {
		return 1 - float64(best-1)/float64(rmax-1)
	}
	return 0
}

// simQueue is a retrieved node's neighbours, by sim descending (node
// number ascending): a heap of those not yet read, and those read, in
// order. A neighbour stays a candidate of the queue while the node is its
// only retrieved neighbour (count 1).
type simQueue struct {
	sim   []float32
	heap  []int32
	taken []int32
}

func (q *simQueue) Len() int { return len(q.heap) }
func (q *simQueue) Less(i, j int) bool {
	a, b := q.heap[i], q.heap[j]
	if q.sim[a] != q.sim[b] {
		return q.sim[a] > q.sim[b]
	}
	return a < b
}
func (q *simQueue) Swap(i, j int) { q.heap[i], q.heap[j] = q.heap[j], q.heap[i] }
func (q *simQueue) Push(x any)    { q.heap = append(q.heap, x.(int32)) }
func (q *simQueue) Pop() any {
	x := q.heap[len(q.heap)-1]
	q.heap = q.heap[:len(q.heap)-1]
	return x
}

// best offers top the queue's first want candidates. They are its best
// by S too: its candidates share I_str, S grows with I_sim, and equal
// scores rank by I_sim, then node number, as the queue does. Nodes that
// stopped being candidates are dropped from the read list.
func (q *simQueue) best(nb *neighbourhood, want int, score func(int32) stexScored, top []stexScored) []stexScored {
	kept, i := 0, 0
	for seen := 0; seen < want; i++ {
		if i == len(q.taken) {
			if len(q.heap) == 0 {
				break
			}
			q.taken = append(q.taken, heap.Pop(q).(int32))
		}
		if n := q.taken[i]; nb.count[n] == 1 {
			q.taken[kept] = n // compact in place: kept ≤ i
			kept, seen = kept+1, seen+1
			top = keepBest(top, want, score(n))
		}
	}
	kept += copy(q.taken[kept:], q.taken[i:])
	q.taken = q.taken[:kept]
	return top
}

// stexScored is a candidate's sort key: the score (S, or I_str under
// β = +Inf), then I_sim, both descending, then node number.
type stexScored struct {
	v        int32
	key, tie float64
}

func (m *fastInsight) stexScore(v int32, istr, isim float64) stexScored {
	if math.IsInf(m.o.Beta, 1) {
		return stexScored{v, istr, isim}
	}
	return stexScored{v, isim + m.o.Beta*istr, isim}
}

// before says whether a ranks above b.
func (a stexScored) before(b stexScored) bool {
	switch {
	case a.key != b.key:
		return a.key > b.key
	case a.tie != b.tie:
		return a.tie > b.tie
	}
	return a.v < b.v
}

// keepBest inserts s into top (sorted best first, at most want long).
func keepBest(top []stexScored, want int, s stexScored) []stexScored {
	if len(top) == want && !s.before(top[want-1]) {
		return top
	}
	i := len(top)
	for i > 0 && s.before(top[i-1]) {
		i--
	}
	top = append(top, stexScored{})
	copy(top[i+1:], top[i:])
	top[i] = s
	return top[:min(len(top), want)]
}
