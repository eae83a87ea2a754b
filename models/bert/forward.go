package bert

import (
	"github.com/gleaner-rag/gleaner/engine"
)

// acts are one forward pass's device activations, on the backend (or
// queue view) be that runs the pass.
type acts struct {
	be             engine.Backend
	n, s, b        int // tokens (b·s), sequence length, batch
	x, x1, q, k, v engine.Buffer
	ctx, inter     engine.Buffer
	lengths        engine.Buffer
}

func (m *Model) newActs(be engine.Backend, batch, s int) (*acts, error) {
	a := &acts{be: be, n: batch * s, s: s, b: batch}
	h, in := m.Cfg.Hidden, m.Cfg.Intermediate
	for _, p := range []*engine.Buffer{&a.x, &a.x1, &a.q, &a.k, &a.v, &a.ctx} {
		buf, err := a.be.Alloc(engine.F32, a.n*h)
		if err != nil {
			a.free()
			return nil, err
		}
		*p = buf
	}
	buf, err := a.be.Alloc(engine.F32, a.n*in)
	if err != nil {
		a.free()
		return nil, err
	}
	a.inter = buf
	return a, nil
}

func (a *acts) free() {
	for _, x := range []engine.Buffer{a.x, a.x1, a.q, a.k, a.v, a.ctx, a.inter, a.lengths} {
		if x != nil {
			a.be.Free(x)
		}
	}
}

// embed gathers word + position + token-type embeddings on the host, then
// uploads and normalises them.
func (m *Model) embed(in Batch, s int, a *acts) error {
	h := m.Cfg.Hidden
	x := make([]float32, a.n*h)
	lengths := make([]int32, a.b)
	for b, ids := range in.IDs {
		lengths[b] = int32(len(ids))
		for p, id := range ids {
			typ := int32(0)
			if in.Types != nil {
				typ = in.Types[b][p]
			}
			row := x[(b*s+p)*h : (b*s+p+1)*h]
			pos := m.Cfg.positionID(p)
			for j := range row {
				row[j] = m.w.word[int(id)*h+j] + m.w.pos[pos*h+j] + m.w.typ[int(typ)*h+j]
			}
		}
	}
	var err error
	if err = a.be.Upload(a.x, 0, x); err != nil {
		return err
	}
	if a.lengths, err = engine.Upload(a.be, lengths); err != nil {
		return err
	}
	return a.be.LayerNorm(engine.LayerNormOp{X: a.x, Gamma: m.d(m.w.embG), Beta: m.d(m.w.embB), Out: a.x, Rows: a.n, Cols: h, Eps: float32(m.Cfg.LayerNormEps)})
}

// linear is out = in · Wᵀ + bias (HuggingFace weights are out × in), with
// an optional activation.
func (m *Model) linear(a *acts, in, out engine.Buffer, rows, inDim, outDim int, w, bias []float32, act engine.Activation) error {
	return engine.GemmFused(a.be, engine.GemmOp{TransB: true, M: rows, N: outDim, K: inDim, Alpha: 1,
		A: in, B: m.d(w), C: out, Bias: m.d(bias), Act: act, Precision: m.Precision})
}

// residual is acc += in · Wᵀ + bias: the sublayer's output added to the
// residual stream by the GEMM itself (beta 1), which the CPU backend folds
// into one pass over acc instead of a product, then an add.
func (m *Model) residual(a *acts, in, acc engine.Buffer, rows, inDim, outDim int, w, bias []float32) error {
	return engine.GemmFused(a.be, engine.GemmOp{TransB: true, M: rows, N: outDim, K: inDim, Alpha: 1, Beta: 1,
		A: in, B: m.d(w), C: acc, Bias: m.d(bias), Precision: m.Precision})
}

// layer runs one post-LayerNorm encoder layer: x ← LN(x + Attn(x)), then
// x ← LN(x + FFN(x)); each residual sum is written over its input, which
// no later step reads.
func (m *Model) layer(l *layer, a *acts) error {
	h, in, eps := m.Cfg.Hidden, m.Cfg.Intermediate, float32(m.Cfg.LayerNormEps)
	steps := []func() error{
		func() error { return m.linear(a, a.x, a.q, a.n, h, h, l.q, l.qb, engine.ActNone) },
		func() error { return m.linear(a, a.x, a.k, a.n, h, h, l.k, l.kb, engine.ActNone) },
		func() error { return m.linear(a, a.x, a.v, a.n, h, h, l.v, l.vb, engine.ActNone) },
		func() error {
			return a.be.Attention(engine.AttentionOp{Batch: a.b, Seq: a.s, Heads: m.Cfg.Heads, HeadDim: h / m.Cfg.Heads,
				Q: a.q, K: a.k, V: a.v, Out: a.ctx, Lengths: a.lengths})
		},
		func() error { return m.residual(a, a.ctx, a.x, a.n, h, h, l.o, l.ob) },
		func() error {
			return a.be.LayerNorm(engine.LayerNormOp{X: a.x, Gamma: m.d(l.ln1g), Beta: m.d(l.ln1b), Out: a.x1, Rows: a.n, Cols: h, Eps: eps})
		},
		func() error { return m.linear(a, a.x1, a.inter, a.n, h, in, l.f1, l.f1b, engine.ActGELU) },
		func() error { return m.residual(a, a.inter, a.x1, a.n, in, h, l.f2, l.f2b) },
		func() error {
			return a.be.LayerNorm(engine.LayerNormOp{X: a.x1, Gamma: m.d(l.ln2g), Beta: m.d(l.ln2b), Out: a.x, Rows: a.n, Cols: h, Eps: eps})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}
