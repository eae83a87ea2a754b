package fuseattn

import (
	"fmt"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/models/llama"
)

// fuse computes each node's fused vector f_i into M_q's last k rows:
// query-conditioned pooling z_i = W_v·Σ_t softmax_t(W_k h_t · W_q z_q /
// √d_a) h_t, then L_g GAT layers over G_q (GELU between layers) with a
// residual, f_i = z_i + GAT(z)_i, so that untrained or shallow GATs keep
// the pooled evidence.
func (f *Fuser) fuse(m *memBuf, lens []int, g *graphops.Subgraph, zq []float32, mem *Memory) error {
	z, err := f.pool(m, lens, zq, mem)
	if err != nil {
		return fmt.Errorf("fuseattn: pooling: %w", err)
	}
	k, d := len(lens), f.Cfg.Dim
	fused := z
	if f.Cfg.GATLayers > 0 {
		x, err := f.gat(z, k, g, mem)
		if err != nil {
			return fmt.Errorf("fuseattn: gat: %w", err)
		}
		if fused, err = f.alloc(mem, k*d); err != nil {
			return err
		}
		if err := f.b.Axpby(engine.AxpbyOp{N: k * d, Alpha: 1, X: z, Beta: 1, Y: x, Out: fused}); err != nil {
			return err
		}
	}
	host, err := engine.Download[float32](f.b, fused)
	if err != nil {
		return err
	}
	return f.b.Upload(m.buf, m.toks*d, host[:k*d]) // k rows: a few kilobytes
}

// pool returns Z (k × d): one attention query per node over its own token
// rows of M_q, then W_v.
func (f *Fuser) pool(m *memBuf, lens []int, zq []float32, mem *Memory) (engine.Buffer, error) {
	b, d, a, k := f.b, f.Cfg.Dim, f.Cfg.PoolDim, len(lens)
	zqb, err := f.alloc(mem, d)
	if err != nil {
		return nil, err
	}
	if err := b.Upload(zqb, 0, zq); err != nil {
		return nil, err
	}
	q, err := f.alloc(mem, a)
	if err != nil {
		return nil, err
	}
	keys, err := f.alloc(mem, m.toks*a)
	if err != nil {
		return nil, err
	}
	pooled, err := f.alloc(mem, k*d)
	if err != nil {
		return nil, err
	}
	z, err := f.alloc(mem, k*d)
	if err != nil {
		return nil, err
	}
	for _, op := range []engine.GemmOp{
		{TransB: true, M: 1, N: a, K: d, Alpha: 1, A: zqb, B: f.w["pool.q.weight"], C: q},
		{TransB: true, M: m.toks, N: a, K: d, Alpha: 1, A: m.buf, B: f.w["pool.k.weight"], C: keys},
	} {
		if err := b.Gemm(op); err != nil {
			return nil, err
		}
	}
	start := 0
	for i, n := range lens {
		op := engine.JointAttentionOp{N: 1, Lt: n, D: a, Dv: d, Q: q, KMem: keys, VMem: m.buf,
			KText: keys, OffKText: start * a, VText: m.buf, OffVText: start * d, Out: pooled, OffOut: i * d}
		if err := engine.JointAttention(b, op); err != nil {
			return nil, err
		}
		start += n
	}
	return z, b.Gemm(engine.GemmOp{TransB: true, M: k, N: d, K: d, Alpha: 1, A: pooled, B: f.w["pool.v.weight"], C: z})
}

// gat runs the GAT layers over G_q from Z.
func (f *Fuser) gat(z engine.Buffer, k int, g *graphops.Subgraph, mem *Memory) (engine.Buffer, error) {
	b, d := f.b, f.Cfg.Dim
	x := z
	for l := 0; l < f.Cfg.GATLayers; l++ {
		wh, err := f.alloc(mem, k*d)
		if err != nil {
			return nil, err
		}
		s, err := f.alloc(mem, 2*k)
		if err != nil {
			return nil, err
		}
		out, err := f.alloc(mem, k*d)
		if err != nil {
			return nil, err
		}
		steps := []func() error{
			func() error {
				return b.Gemm(engine.GemmOp{TransB: true, M: k, N: d, K: d, Alpha: 1, A: x, B: f.w[fmt.Sprintf("gat.%d.weight", l)], C: wh})
			},
			func() error {
				return b.Gemm(engine.GemmOp{TransB: true, M: k, N: 2, K: d, Alpha: 1, A: wh, B: f.w[fmt.Sprintf("gat.%d.att", l)], C: s})
			},
			func() error {
				return engine.GAT(b, engine.GATOp{N: k, D: d, AdjPtr: g.Ptr, AdjIdx: g.Idx, H: wh, S: s, Out: out, Slope: float32(f.Cfg.GATSlope)})
			},
		}
		if l < f.Cfg.GATLayers-1 {
			steps = append(steps, func() error { return b.Activate(engine.ActivateOp{Act: engine.ActGELU, X: out, Out: out, N: k * d}) })
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return nil, err
			}
		}
		x = out
	}
	return x, nil
}

// project makes each memory layer's keys and values, (LN(M_q)·A)·B.
func (f *Fuser) project(m *memBuf, mem *Memory) (*llama.Memory, error) {
	c := f.Cfg
	kv := &llama.Memory{Len: m.rows, K: make([]engine.Buffer, c.DecoderLayers), V: make([]engine.Buffer, c.DecoderLayers)}
	for _, l := range c.MemoryLayers {
		for _, side := range []struct {
			name string
			dst  *engine.Buffer
		}{{"k", &kv.K[l]}, {"v", &kv.V[l]}} {
			out, err := f.alloc(mem, m.rows*c.KVDim)
			if err != nil {
				return nil, err
			}
			op := engine.LowRankOp{L: m.rows, De: c.Dim, R: c.Rank, Dkv: c.KVDim, M: m.buf,
				Gamma: f.w["memory.norm.weight"], Beta: f.w["memory.norm.bias"],
				A: f.w[fmt.Sprintf("memory.%d.%s_a", l, side.name)], B: f.w[fmt.Sprintf("memory.%d.%s_b", l, side.name)],
				Out: out, Eps: float32(c.LayerNormEps)}
			if err := engine.LowRankProject(f.b, op); err != nil {
				return nil, err
			}
			*side.dst = out
		}
	}
	return kv, nil
}
