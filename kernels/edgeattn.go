package kernels

import (
	"fmt"
	"math"

	"github.com/gleaner-rag/gleaner/engine"
)

// EdgeAttentionArgs describes Exphormer's sparse attention (docs/methods.md
// §3.2) over attention edges grouped by destination: the edges into node i
// are positions Ptr[i]..Ptr[i+1], with source Src[p] and edge features
// E[p·D:(p+1)·D]. K, Q, V and Out are N×D with D = Heads·HeadDim.
//
// ERow, when set, indexes a table instead: edge p's features are row
// ERow[p] of E. Edges of few types (relations, expander, virtual node)
// then share rows rather than each carrying a copy.
type EdgeAttentionArgs struct {
	N, Heads, HeadDim int
	Ptr               []int64
	Src               []int32
	ERow              []int32
	K, Q, V, E, Out   []float32
}

// edgeRow is the row of E holding edge p's features.
func (a *EdgeAttentionArgs) edgeRow(p int64) int {
	if a.ERow != nil {
		return int(a.ERow[p])
	}
	return int(p)
}

// edgeClamp bounds the attention logits, as Exphormer does.
const edgeClamp = 5

// EdgeAttention computes, per head and destination i:
//
//	s_p   = exp(clamp(Σ_k K[src,k]·Q[i,k]/√HeadDim · E[p,k], −5, 5))
//	Out_i = Σ_p s_p·V[src,:] / (Σ_p s_p + 1e-6)
//
// in parallel over destinations (each output row has one writer, so the
// scatter-sum needs no atomics). Nodes without incoming edges get zeros.
func EdgeAttention(a EdgeAttentionArgs) error {
	d := a.Heads * a.HeadDim
	if a.Heads <= 0 || a.HeadDim <= 0 {
		return fmt.Errorf("kernels: edge attention: bad shape or pointers")
	}
	nnz, err := engine.CheckEdges("kernels: edge attention", a.N, a.Ptr, a.Src)
	if err != nil {
		return err
	}
	if err := a.checkRows(nnz, d); err != nil {
		return err
	}
	if len(a.K) < a.N*d || len(a.Q) < a.N*d || len(a.V) < a.N*d || len(a.Out) < a.N*d {
		return fmt.Errorf("kernels: edge attention: buffers too short for %d nodes, %d edges", a.N, nnz)
	}
	scale := float32(1 / math.Sqrt(float64(a.HeadDim)))
	parallelRows(a.N, nnz/max(a.N, 1)*d+d, func(lo, hi int) {
		edgeAttendRange(&a, scale, make([]float32, a.Heads), lo, hi)
	})
	return nil
}

// edgeAttendRange computes destinations [lo, hi); a SIMD version replaces
// it at start-up where the CPU allows. z has one slot per head.
var edgeAttendRange = edgeAttendRangeGo

func edgeAttendRangeGo(a *EdgeAttentionArgs, scale float32, z []float32, lo, hi int) {
	d := a.Heads * a.HeadDim
	for i := lo; i < hi; i++ {
		edgeAttendNode(a, i, d, scale, z)
	}
}

func edgeAttendNode(a *EdgeAttentionArgs, i, d int, scale float32, z []float32) {
	out, q := a.Out[i*d:(i+1)*d], a.Q[i*d:(i+1)*d]
	clear(out)
	clear(z)
	for p := a.Ptr[i]; p < a.Ptr[i+1]; p++ {
		src := int(a.Src[p])
		r := a.edgeRow(p)
		k, v, e := a.K[src*d:(src+1)*d], a.V[src*d:(src+1)*d], a.E[r*d:(r+1)*d]
		for h := 0; h < a.Heads; h++ {
			lo, hi := h*a.HeadDim, (h+1)*a.HeadDim
			var logit float32
			for j := lo; j < hi; j++ {
				logit += k[j] * q[j] * scale * e[j]
			}
			s := float32(math.Exp(float64(min(max(logit, -edgeClamp), edgeClamp))))
			z[h] += s
			axpy(s, v[lo:hi], out[lo:hi])
		}
	}
	for h := 0; h < a.Heads; h++ {
		inv := 1 / (z[h] + 1e-6)
		for j := h * a.HeadDim; j < (h+1)*a.HeadDim; j++ {
			out[j] *= inv
		}
	}
}

// checkRows checks that every edge's feature row lies inside E.
func (a *EdgeAttentionArgs) checkRows(nnz, d int) error {
	if a.ERow == nil {
		if len(a.E) < nnz*d {
			return fmt.Errorf("kernels: edge attention: %d edge features for %d edges of width %d", len(a.E), nnz, d)
		}
		return nil
	}
	return engine.CheckFeatureRows("kernels: edge attention", a.ERow, nnz, len(a.E)/d, false)
}
