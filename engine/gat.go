package engine

import (
	"errors"
	"fmt"
	"math"
)

// GAT runs one graph-attention head on b: the backend's own op when it has
// one, else on the host — the graph is FuseRAG's evidence subgraph (tens
// of nodes), so the two transfers cost less than a kernel launch plans.
func GAT(b Backend, op GATOp) error {
	if err := b.GAT(op); !errors.Is(err, ErrNotImplemented) {
		return err
	}
	if err := op.Check(); err != nil {
		return err
	}
	h, err := Download[float32](b, op.H)
	if err != nil {
		return err
	}
	s, err := Download[float32](b, op.S)
	if err != nil {
		return err
	}
	if len(h) < op.N*op.D || len(s) < 2*op.N {
		return fmt.Errorf("engine: gat: buffers too short")
	}
	out := make([]float32, op.N*op.D)
	for i := 0; i < op.N; i++ {
		if err := hostGATRow(op, h, s, i, out[i*op.D:(i+1)*op.D]); err != nil {
			return err
		}
	}
	return b.Upload(op.Out, 0, out)
}

// hostGATRow is node i's softmax over LeakyReLU scores of itself and its
// neighbours, in float64.
func hostGATRow(op GATOp, h, s []float32, i int, out []float32) error {
	nb := []int{i}
	for p := op.AdjPtr[i]; p < op.AdjPtr[i+1]; p++ {
		if p < 0 || int(p) >= len(op.AdjIdx) {
			return fmt.Errorf("engine: gat: adjacency pointers do not fit %d neighbours", len(op.AdjIdx))
		}
		j := int(op.AdjIdx[p])
		if j < 0 || j >= op.N {
			return fmt.Errorf("engine: gat: node %d has neighbour %d outside 0…%d", i, j, op.N-1)
		}
		if j != i {
			nb = append(nb, j)
		}
	}
	e, top := make([]float64, len(nb)), math.Inf(-1)
	for k, j := range nb {
		x := float64(s[2*i]) + float64(s[2*j+1])
		if x < 0 {
			x *= float64(op.Slope)
		}
		e[k], top = x, math.Max(top, x)
	}
	z := 0.0
	for k := range e {
		e[k] = math.Exp(e[k] - top)
		z += e[k]
	}
	acc := make([]float64, op.D)
	for k, j := range nb {
		for c := 0; c < op.D; c++ {
			acc[c] += e[k] / z * float64(h[j*op.D+c])
		}
	}
	for c, v := range acc {
		out[c] = float32(v)
	}
	return nil
}
