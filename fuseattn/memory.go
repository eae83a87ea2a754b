package fuseattn

import (
	"context"
	"fmt"
	"time"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/models/llama"
	"github.com/gleaner-rag/gleaner/models/safetensors"
)

// Fuser builds FuseRAG's latent memory on a backend (docs/methods.md §7,
// stages 2a and 3): evidence token states (cached across queries),
// query-conditioned cross-attention pooling, the GAT over G_q, and the
// low-rank memory keys and values of each memory layer. It is safe for
// concurrent use.
type Fuser struct {
	Cfg   AdapterConfig
	b     engine.Backend
	enc   EvidenceEncoder
	cache *StateCache
	w     map[string]engine.Buffer
}

// NewFuser uploads the adapters. enc must produce states of the adapters'
// width; cache may be nil (no caching).
func NewFuser(c AdapterConfig, t map[string]safetensors.Tensor, b engine.Backend, enc EvidenceEncoder, cache *StateCache) (*Fuser, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := c.checkTensors(t); err != nil {
		return nil, err
	}
	if enc == nil || enc.Dim() != c.Dim {
		return nil, fmt.Errorf("fuseattn: the adapters expect %d-wide evidence states (%s), the encoder gives %v", c.Dim, c.Encoder, encDim(enc))
	}
	if cache == nil {
		cache = NewStateCache(0)
	}
	f := &Fuser{Cfg: c, b: b, enc: enc, cache: cache, w: map[string]engine.Buffer{}}
	for n := range c.tensorShapes() {
		buf, err := engine.Upload(b, t[n].Data)
		if err != nil {
			f.Close()
			return nil, err
		}
		f.w[n] = buf
	}
	return f, nil
}

func encDim(e EvidenceEncoder) any {
	if e == nil {
		return "none"
	}
	return e.Dim()
}

// Close frees the adapters on the backend.
func (f *Fuser) Close() {
	for _, b := range f.w {
		f.b.Free(b)
	}
	f.w = nil
}

// Cache is the fuser's state cache.
func (f *Fuser) Cache() *StateCache { return f.cache }

// CheckDecoder refuses a decoder the adapters were not made for.
func (f *Fuser) CheckDecoder(c llama.Config) error {
	if c.Layers != f.Cfg.DecoderLayers || c.KVDim() != f.Cfg.KVDim {
		return fmt.Errorf("fuseattn: the adapters project into a decoder of %d layers with %d-wide keys, the decoder has %d layers and %d",
			f.Cfg.DecoderLayers, f.Cfg.KVDim, c.Layers, c.KVDim())
	}
	return nil
}

// MemoryStats time Build's stages.
type MemoryStats struct {
	Nodes           int
	Rows            int // L_M = N + k
	Cached, Encoded int // nodes whose states came from the cache / the encoder
	Encode          time.Duration
	PoolGAT         time.Duration
	Project         time.Duration
}

// Memory is a built memory: the decoder's per-layer keys and values. Free
// releases its buffers.
type Memory struct {
	KV   *llama.Memory
	bufs []engine.Buffer
	b    engine.Backend
}

// Free releases the memory's buffers.
func (m *Memory) Free() {
	for _, x := range m.bufs {
		m.b.Free(x)
	}
	m.bufs = nil
}

// Build makes M_q for the evidence nodes (texts gives a node's text), the
// evidence graph g (local ids = positions in nodes) and the query vector
// zq (Dim values), and projects it into each memory layer. M_q's rows are
// [H_1; …; H_K; f_1; …; f_K]: the paper interleaves each node's states
// with its fused vector, which is the same memory, as memory keys carry no
// positions and attention does not depend on their order.
func (f *Fuser) Build(ctx context.Context, nodes []int32, texts func(int32) string, g *graphops.Subgraph, zq []float32) (*Memory, MemoryStats, error) {
	st := MemoryStats{Nodes: len(nodes)}
	if len(nodes) == 0 {
		return nil, st, fmt.Errorf("fuseattn: no evidence to build a memory from")
	}
	if len(zq) != f.Cfg.Dim {
		return nil, st, fmt.Errorf("fuseattn: the query vector has %d values, the adapters %d", len(zq), f.Cfg.Dim)
	}
	if g == nil || len(g.Nodes) != len(nodes) {
		return nil, st, fmt.Errorf("fuseattn: the evidence graph must have one node per evidence node")
	}
	t0 := time.Now()
	states, err := f.states(ctx, nodes, texts, &st)
	if err != nil {
		return nil, st, err
	}
	st.Encode = time.Since(t0)
	mem := &Memory{b: f.b}
	m, lens, err := f.uploadStates(states, mem)
	if err != nil {
		mem.Free()
		return nil, st, err
	}
	st.Rows = m.rows
	t1 := time.Now()
	if err := f.fuse(m, lens, g, zq, mem); err != nil {
		mem.Free()
		return nil, st, err
	}
	st.PoolGAT = time.Since(t1)
	t2 := time.Now()
	if mem.KV, err = f.project(m, mem); err != nil {
		mem.Free()
		return nil, st, err
	}
	st.Project = time.Since(t2)
	return mem, st, nil
}

// states returns each node's token states, from the cache or one encoder
// call for the rest.
func (f *Fuser) states(ctx context.Context, nodes []int32, texts func(int32) string, st *MemoryStats) ([][]float32, error) {
	out := make([][]float32, len(nodes))
	var missing []int
	var batch []string
	for i, v := range nodes {
		if h, ok := f.cache.Get(v); ok {
			out[i] = h
			st.Cached++
			continue
		}
		missing = append(missing, i)
		batch = append(batch, texts(v))
	}
	if len(batch) == 0 {
		return out, nil
	}
	enc, err := f.enc.States(ctx, batch)
	if err != nil {
		return nil, fmt.Errorf("fuseattn: evidence encoder %s: %w", f.enc.Name(), err)
	}
	for k, i := range missing {
		h := enc[k]
		if len(h) == 0 || len(h)%f.Cfg.Dim != 0 {
			return nil, fmt.Errorf("fuseattn: evidence encoder %s gave node %d %d values, not rows of %d", f.enc.Name(), nodes[i], len(h), f.Cfg.Dim)
		}
		out[i] = h
		f.cache.Put(nodes[i], h)
	}
	st.Encoded = len(missing)
	return out, nil
}

// memBuf is M_q on the device: N token rows then k fused rows.
type memBuf struct {
	buf        engine.Buffer
	rows, toks int
}

func (f *Fuser) alloc(mem *Memory, n int) (engine.Buffer, error) {
	b, err := f.b.Alloc(engine.F32, max(n, 1))
	if err == nil {
		mem.bufs = append(mem.bufs, b)
	}
	return b, err
}

// uploadStates puts every node's states into M_q's first N rows and
// returns each node's token count.
func (f *Fuser) uploadStates(states [][]float32, mem *Memory) (*memBuf, []int, error) {
	d := f.Cfg.Dim
	lens := make([]int, len(states))
	toks := 0
	for i, h := range states {
		lens[i] = len(h) / d
		toks += lens[i]
	}
	m := &memBuf{rows: toks + len(states), toks: toks}
	var err error
	if m.buf, err = f.alloc(mem, m.rows*d); err != nil {
		return nil, nil, err
	}
	off := 0
	for _, h := range states {
		if err := f.b.Upload(m.buf, off, h); err != nil {
			return nil, nil, err
		}
		off += len(h)
	}
	return m, lens, nil
}
