package llama

import (
	"context"
	"fmt"

	"github.com/gleaner-rag/gleaner/engine"
)

// Memory is per-layer key/value memory prepended to a session's attention
// (FuseRAG's memory-KV): for layer l with K[l] set, every text position
// attends over [memory; text] under one softmax. K[l] and V[l] hold Len
// rows of KVDim values (row-major, heads side by side, as the model's own
// keys). Memory keys carry no rotary position: they are not tokens of the
// sequence (docs/methods.md §7 leaves their positions open; gleaner keeps
// them position-free so the text's positions are unchanged). The buffers
// belong to the caller and must outlive the session.
type Memory struct {
	Len  int
	K, V []engine.Buffer // one entry per layer; nil for layers without memory
}

func (mem *Memory) check(c *Config) error {
	if mem == nil {
		return nil
	}
	if mem.Len < 0 || len(mem.K) != c.Layers || len(mem.V) != c.Layers {
		return fmt.Errorf("llama: memory must have one K and V entry per layer (%d), got %d and %d", c.Layers, len(mem.K), len(mem.V))
	}
	for l := range mem.K {
		if (mem.K[l] == nil) != (mem.V[l] == nil) {
			return fmt.Errorf("llama: memory layer %d has keys without values or values without keys", l)
		}
		if mem.K[l] != nil && (mem.K[l].Len() < mem.Len*c.KVDim() || mem.V[l].Len() < mem.Len*c.KVDim()) {
			return fmt.Errorf("llama: memory layer %d holds fewer than %d rows of %d values", l, mem.Len, c.KVDim())
		}
	}
	return nil
}

// Session is one sequence being decoded: its KV cache and position. A
// session is not safe for concurrent use; sessions of one model are.
type Session struct {
	m      *Model
	mem    *Memory
	cap    int
	pos    int
	k, v   []engine.Buffer // per layer: cap × KVDim
	closed bool
}

// NewSession allocates a KV cache for up to capacity positions (at most
// max_position_embeddings), with optional memory.
func (m *Model) NewSession(capacity int, mem *Memory) (*Session, error) {
	if capacity < 1 || capacity > m.Cfg.MaxPositions {
		return nil, fmt.Errorf("llama: session capacity %d: want 1 … %d (max_position_embeddings)", capacity, m.Cfg.MaxPositions)
	}
	if err := mem.check(&m.Cfg); err != nil {
		return nil, err
	}
	s := &Session{m: m, mem: mem, cap: capacity}
	for range m.Cfg.Layers {
		for _, dst := range []*[]engine.Buffer{&s.k, &s.v} {
			buf, err := m.b.Alloc(engine.F32, capacity*m.Cfg.KVDim())
			if err != nil {
				s.Close()
				return nil, err
			}
			*dst = append(*dst, buf)
		}
	}
	return s, nil
}

// Pos is the number of positions in the cache.
func (s *Session) Pos() int { return s.pos }

// Close frees the cache.
func (s *Session) Close() {
	for _, b := range append(s.k, s.v...) {
		s.m.b.Free(b)
	}
	s.k, s.v, s.closed = nil, nil, true
}

// acts are one Forward call's activations (n positions).
type acts struct {
	x, h, q, attn, gu, ff engine.Buffer
}

func (s *Session) newActs(n int) (*acts, []engine.Buffer, error) {
	c := &s.m.Cfg
	a := &acts{}
	var all []engine.Buffer
	for _, p := range []struct {
		dst  *engine.Buffer
		size int
	}{{&a.x, c.Hidden}, {&a.h, c.Hidden}, {&a.q, c.QDim()}, {&a.attn, c.QDim()}, {&a.gu, 2 * c.Intermediate}, {&a.ff, c.Intermediate}} {
		buf, err := s.m.b.Alloc(engine.F32, n*p.size)
		if err != nil {
			freeAll(s.m.b, all)
			return nil, nil, err
		}
		*p.dst = buf
		all = append(all, buf)
	}
	return a, all, nil
}

func freeAll(b engine.Backend, bufs []engine.Buffer) {
	for _, x := range bufs {
		b.Free(x)
	}
}

// Forward appends ids to the sequence and returns the logits of its last
// position (VocabSize values), or of every new position (n × VocabSize)
// with all set.
func (s *Session) Forward(ctx context.Context, ids []int32, all bool) ([]float32, error) {
	c := &s.m.Cfg
	switch {
	case s.closed:
		return nil, fmt.Errorf("llama: session is closed")
	case len(ids) == 0:
		return nil, fmt.Errorf("llama: no tokens to decode")
	case s.pos+len(ids) > s.cap:
		return nil, fmt.Errorf("llama: %d more tokens overflow the session's %d positions (%d used)", len(ids), s.cap, s.pos)
	}
	for i, id := range ids {
		if id < 0 || int(id) >= c.VocabSize {
			return nil, fmt.Errorf("llama: input token %d has id %d, outside the decoder's vocabulary of %d (is the tokenizer the model's own?)", i, id, c.VocabSize)
		}
	}
	n := len(ids)
	a, bufs, err := s.newActs(n)
	if err != nil {
		return nil, err
	}
	defer freeAll(s.m.b, bufs)
	if err := s.embed(ids, a.x); err != nil {
		return nil, err
	}
	for l := range s.m.layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := s.layer(l, n, a); err != nil {
			return nil, fmt.Errorf("llama: layer %d: %w", l, err)
		}
	}
	s.pos += n
	return s.logits(n, a, all)
}

// embed gathers the token rows on the host and uploads them.
func (s *Session) embed(ids []int32, x engine.Buffer) error {
	h := s.m.Cfg.Hidden
	rows := make([]float32, len(ids)*h)
	for i, id := range ids {
		copy(rows[i*h:(i+1)*h], s.m.embed[int(id)*h:int(id+1)*h])
	}
	return s.m.b.Upload(x, 0, rows)
}

// layer runs one pre-norm decoder layer on n new positions:
// x ← x + o(attn(rope(q), rope(k), v)); x ← x + down(silu(gate)·up).
func (s *Session) layer(l, n int, a *acts) error {
	b, c, w := s.m.b, &s.m.Cfg, &s.m.layers[l]
	h, kv := c.Hidden, c.KVDim()
	eps := float32(c.RMSNormEps)
	if err := b.RMSNorm(engine.RMSNormOp{X: a.x, Gamma: w.attnNorm, Out: a.h, Rows: n, Cols: h, Eps: eps}); err != nil {
		return err
	}
	proj := []engine.GemmOp{ // k and v land in the cache at this position
		{TransB: true, M: n, N: c.QDim(), K: h, Alpha: 1, A: a.h, B: w.wq, C: a.q},
		{TransB: true, M: n, N: kv, K: h, Alpha: 1, A: a.h, B: w.wk, C: s.k[l], OffC: s.pos * kv},
		{TransB: true, M: n, N: kv, K: h, Alpha: 1, A: a.h, B: w.wv, C: s.v[l], OffC: s.pos * kv},
	}
	for _, g := range proj {
		if err := b.Gemm(g); err != nil {
			return err
		}
	}
	rope := []engine.RoPEOp{
		{X: a.q, Rows: n, Heads: c.Heads, HeadDim: c.HeadDim, Pos0: s.pos, InvFreq: s.m.invFreq},
		{X: s.k[l], Off: s.pos * kv, Rows: n, Heads: c.KVHeads, HeadDim: c.HeadDim, Pos0: s.pos, InvFreq: s.m.invFreq},
	}
	for _, r := range rope {
		if err := b.RoPE(r); err != nil {
			return err
		}
	}
	if err := s.attend(l, n, a); err != nil {
		return err
	}
	steps := []func() error{
		func() error { // residual through β = 1
			return b.Gemm(engine.GemmOp{TransB: true, M: n, N: h, K: c.QDim(), Alpha: 1, Beta: 1, A: a.attn, B: w.wo, C: a.x})
		},
		func() error {
			return b.RMSNorm(engine.RMSNormOp{X: a.x, Gamma: w.mlpNorm, Out: a.h, Rows: n, Cols: h, Eps: eps})
		},
		func() error { // gate and up side by side in each row of gu: [gate | up]
			return b.Gemm(engine.GemmOp{TransB: true, M: n, N: c.Intermediate, K: h, Alpha: 1, A: a.h, B: w.wGate, C: a.gu, LDC: 2 * c.Intermediate})
		},
		func() error {
			return b.Gemm(engine.GemmOp{TransB: true, M: n, N: c.Intermediate, K: h, Alpha: 1, A: a.h, B: w.wUp, C: a.gu, OffC: c.Intermediate, LDC: 2 * c.Intermediate})
		},
		func() error { return b.SwiGLU(engine.SwiGLUOp{X: a.gu, Out: a.ff, Rows: n, Cols: c.Intermediate}) },
		func() error {
			return b.Gemm(engine.GemmOp{TransB: true, M: n, N: h, K: c.Intermediate, Alpha: 1, Beta: 1, A: a.ff, B: w.wDown, C: a.x})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// attend runs each query head over its key/value head's cache (and the
// layer's memory), causally, through the engine's joint attention.
func (s *Session) attend(l, n int, a *acts) error {
	c := &s.m.Cfg
	d, q, kv := c.HeadDim, c.QDim(), c.KVDim()
	group := c.Heads / c.KVHeads
	op := engine.JointAttentionOp{N: n, Lt: s.pos + n, D: d, Dv: d, Q: a.q, KText: s.k[l], VText: s.v[l], Out: a.attn, Causal: true,
		LDQ: q, LDKText: kv, LDVText: kv, LDOut: q, KMem: s.k[l], VMem: s.v[l]}
	if s.mem != nil && s.mem.K[l] != nil && s.mem.Len > 0 {
		op.Lm, op.KMem, op.VMem, op.LDKMem, op.LDVMem = s.mem.Len, s.mem.K[l], s.mem.V[l], kv, kv
	}
	for head := 0; head < c.Heads; head++ {
		g := head / group
		op.OffQ, op.OffOut = head*d, head*d
		op.OffKText, op.OffVText, op.OffKMem, op.OffVMem = g*d, g*d, g*d, g*d
		if err := engine.JointAttention(s.m.b, op); err != nil {
			return err
		}
	}
	return nil
}

// logits applies the final norm and the LM head to the last position (or
// all n).
func (s *Session) logits(n int, a *acts, all bool) ([]float32, error) {
	b, c := s.m.b, &s.m.Cfg
	rows, off := n, 0
	if !all {
		rows, off = 1, (n-1)*c.Hidden
	}
	out, err := b.Alloc(engine.F32, rows*c.VocabSize)
	if err != nil {
		return nil, err
	}
	defer b.Free(out)
	if err := b.RMSNorm(engine.RMSNormOp{X: a.x, Gamma: s.m.norm, Out: a.h, Rows: n, Cols: c.Hidden, Eps: float32(c.RMSNormEps)}); err != nil {
		return nil, err
	}
	if err := b.Gemm(engine.GemmOp{TransB: true, M: rows, N: c.VocabSize, K: c.Hidden, Alpha: 1, A: a.h, OffA: off, B: s.m.lmHead, C: out}); err != nil {
		return nil, err
	}
	return engine.Download[float32](b, out)
}
