package llama

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/models/safetensors"
)

// layer holds one decoder layer's weights on the backend (HuggingFace's
// out × in matrices).
type layer struct {
	attnNorm, mlpNorm engine.Buffer
	wq, wk, wv, wo    engine.Buffer
	wGate, wUp, wDown engine.Buffer
}

// Model is a loaded decoder whose weights live on one backend. Sessions
// made from it may run concurrently (each has its own KV cache).
type Model struct {
	Cfg     Config
	b       engine.Backend
	embed   []float32 // V × H on the host: the embedding is a row gather
	layers  []layer
	norm    engine.Buffer
	lmHead  engine.Buffer
	invFreq []float32
	owned   []engine.Buffer
	release func() error // unmaps the weights file (Load)
}

// Load reads config.json and model.safetensors from dir, the weights
// memory-mapped (Close unmaps them).
func Load(dir string, b engine.Backend) (*Model, error) {
	cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "model.safetensors")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("llama: %s: %w (sharded checkpoints are not read: merge them into one model.safetensors)", dir, err)
	}
	t, release, err := safetensors.Map(path) // F32 weights stay in the page cache, not copied to the heap
	if err != nil {
		return nil, err
	}
	m, err := New(cfg, t, b)
	if err != nil {
		release()
		return nil, err
	}
	m.release = release
	return m, nil
}

// New checks every tensor's shape against cfg and uploads the weights.
// Missing or misshapen tensors are one error listing them.
func New(cfg Config, t map[string]safetensors.Tensor, b engine.Backend) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	if err := probeDecoderOps(b); err != nil {
		return nil, err
	}
	m := &Model{Cfg: cfg, b: b, invFreq: cfg.InvFreq()}
	w := &weightReader{t: t}
	h, q, kv, in := cfg.Hidden, cfg.QDim(), cfg.KVDim(), cfg.Intermediate
	m.embed = w.get("model.embed_tokens.weight", cfg.VocabSize, h)
	for i := 0; i < cfg.Layers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		w.get(p+"input_layernorm.weight", h)
		w.get(p+"post_attention_layernorm.weight", h)
		w.get(p+"self_attn.q_proj.weight", q, h)
		w.get(p+"self_attn.k_proj.weight", kv, h)
		w.get(p+"self_attn.v_proj.weight", kv, h)
		w.get(p+"self_attn.o_proj.weight", h, q)
		w.get(p+"mlp.gate_proj.weight", in, h)
		w.get(p+"mlp.up_proj.weight", in, h)
		w.get(p+"mlp.down_proj.weight", h, in)
	}
	w.get("model.norm.weight", h)
	head := "lm_head.weight"
	if cfg.TieWordEmbeddings {
		head = "model.embed_tokens.weight"
	}
	w.get(head, cfg.VocabSize, h)
	if err := w.err(); err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	if err := m.upload(t, head); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// upload binds the weights on the backend: a host backend aliases the
// tensors (a 1B-parameter decoder is not held twice), a device backend
// copies them.
func (m *Model) upload(t map[string]safetensors.Tensor, head string) error {
	var err error
	up := func(data []float32) engine.Buffer {
		if err != nil {
			return nil
		}
		var buf engine.Buffer
		if buf, err = m.b.Bind(data); err == nil {
			m.owned = append(m.owned, buf)
		}
		return buf
	}
	for i := 0; i < m.Cfg.Layers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		d := func(name string) []float32 { return t[p+name].Data }
		m.layers = append(m.layers, layer{
			attnNorm: up(d("input_layernorm.weight")), mlpNorm: up(d("post_attention_layernorm.weight")),
			wq: up(d("self_attn.q_proj.weight")), wk: up(d("self_attn.k_proj.weight")), wv: up(d("self_attn.v_proj.weight")),
			wo: up(d("self_attn.o_proj.weight")), wDown: up(d("mlp.down_proj.weight")),
			wGate: up(d("mlp.gate_proj.weight")), wUp: up(d("mlp.up_proj.weight")),
		})
	}
	m.norm = up(t["model.norm.weight"].Data)
	m.lmHead = up(t[head].Data)
	return err
}

// Close frees the weights on the backend (and unmaps the file Load
// mapped); the model and its sessions must not be used after.
func (m *Model) Close() {
	for _, b := range m.owned {
		m.b.Free(b)
	}
	m.owned = nil
	if m.release != nil {
		m.release()
		m.release = nil
	}
}

// Backend is the backend the weights live on.
func (m *Model) Backend() engine.Backend { return m.b }

// weightReader collects shape problems instead of stopping at the first.
type weightReader struct {
	t    map[string]safetensors.Tensor
	errs []string
}

func (w *weightReader) get(name string, shape ...int) []float32 {
	x, ok := w.t[name]
	switch {
	case !ok:
		w.errs = append(w.errs, fmt.Sprintf("tensor %q is missing", name))
	case !slices.Equal(x.Shape, shape):
		w.errs = append(w.errs, fmt.Sprintf("tensor %q has shape %v, want %v", name, x.Shape, shape))
	default:
		return x.Data
	}
	return nil
}

func (w *weightReader) err() error {
	if len(w.errs) == 0 {
		return nil
	}
	if len(w.errs) > 5 {
		w.errs = append(w.errs[:5], fmt.Sprintf("and %d more", len(w.errs)-5))
	}
	return fmt.Errorf("weights do not match config.json: %v", w.errs)
}

// probeDecoderOps refuses a backend without the decoder's ops before any
// weight is uploaded.
func probeDecoderOps(b engine.Backend) error {
	x, err := engine.Upload(b, []float32{1, 1})
	if err != nil {
		return err
	}
	defer b.Free(x)
	for name, err := range map[string]error{
		"RMSNorm": b.RMSNorm(engine.RMSNormOp{X: x, Gamma: x, Out: x, Rows: 1, Cols: 2, Eps: 1e-6}),
		"RoPE":    b.RoPE(engine.RoPEOp{X: x, Rows: 1, Heads: 1, HeadDim: 2, InvFreq: []float32{1}}),
		"SwiGLU":  b.SwiGLU(engine.SwiGLUOp{X: x, Out: x, Rows: 1, Cols: 1}),
	} {
		if err != nil {
			return fmt.Errorf("llama: backend %s cannot run a decoder: %s: %w", b.Name(), name, err)
		}
	}
	return nil
}
