package kernels

import (
	"fmt"
	"math"
)

// GATArgs describes one head of a graph attention layer over a small graph
// of N nodes (FuseRAG's fusion over G_q, docs/methods.md §7): H (N×D) holds
// the projected node states W·z, S (N×2) each node's two attention terms
// (a_dstᵀ·W·z_i, a_srcᵀ·W·z_i), and Ptr/Idx each node's neighbours.
type GATArgs struct {
	N, D  int
	Ptr   []int64
	Idx   []int32
	H, S  []float32
	Out   []float32
	Slope float32 // LeakyReLU's negative slope (0.2 in GAT)
}

// GAT computes Out_i = Σ_j α_ij·H_j over j ∈ N(i) ∪ {i} (the self loop is
// added once, whether or not Idx lists i), with α_i· = softmax_j
// LeakyReLU(S_i0 + S_j1) — Veličković et al.'s attention. Out must not
// alias H.
//
// Reference loop: per node, the scores in float64, a max-shifted softmax,
// the weighted sum in float64.
func GAT(a GATArgs) error {
	if a.N < 0 || a.D <= 0 || len(a.Ptr) != a.N+1 || len(a.H) < a.N*a.D || len(a.S) < 2*a.N || len(a.Out) < a.N*a.D {
		return fmt.Errorf("kernels: gat: bad shapes N=%d D=%d", a.N, a.D)
	}
	if a.N > 0 && (a.Ptr[0] != 0 || int(a.Ptr[a.N]) > len(a.Idx)) {
		return fmt.Errorf("kernels: gat: adjacency pointers do not fit %d neighbours", len(a.Idx))
	}
	acc := make([]float64, a.D)
	for i := 0; i < a.N; i++ {
		if a.Ptr[i] > a.Ptr[i+1] {
			return fmt.Errorf("kernels: gat: adjacency pointers decrease at node %d", i)
		}
		nb := []int32{int32(i)}
		for _, j := range a.Idx[a.Ptr[i]:a.Ptr[i+1]] {
			if j < 0 || int(j) >= a.N {
				return fmt.Errorf("kernels: gat: node %d has neighbour %d outside 0…%d", i, j, a.N-1)
			}
			if int(j) != i {
				nb = append(nb, j)
			}
		}
		gatRow(a, i, nb, acc)
	}
	return nil
}

func gatRow(a GATArgs, i int, nb []int32, acc []float64) {
	e := make([]float64, len(nb))
	top := math.Inf(-1)
	for k, j := range nb {
		x := float64(a.S[2*i]) + float64(a.S[2*int(j)+1])
		if x < 0 {
			x *= float64(a.Slope)
		}
		e[k] = x
		top = math.Max(top, x)
	}
	z := 0.0
	for k := range e {
		e[k] = math.Exp(e[k] - top)
		z += e[k]
	}
	clear(acc)
	for k, j := range nb {
		w := e[k] / z
		for c, h := range a.H[int(j)*a.D : int(j+1)*a.D] {
			acc[c] += w * float64(h)
		}
	}
	for c, v := range acc {
		a.Out[i*a.D+c] = float32(v)
	}
}
