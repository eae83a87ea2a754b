package bert

import (
	"context"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/safetensors"
)

// Model is a loaded encoder whose weights live on one backend. Forward is
// safe for concurrent use (each call allocates its own activations).
type Model struct {
	Cfg  Config
	w    *weights
	b    engine.Backend
	dev  map[*float32]engine.Buffer // device copy of each weight, by its first element
	Head *models.Head               // nil for a model without a classification head
	// Precision is what the layers' GEMMs may use (engine.Precision; zero:
	// float32). Set it before the model is used, not while it runs.
	Precision engine.Precision
}

// Load reads config.json and model.safetensors from dir.
func Load(dir string, b engine.Backend) (*Model, error) {
	cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	t, err := safetensors.Read(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return nil, err
	}
	return New(cfg, t, b)
}

// New builds a model from a config and its tensors, binding the weights on
// b (they must not change while the model is in use).
func New(cfg Config, t map[string]safetensors.Tensor, b engine.Backend) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkFinite(t); err != nil {
		return nil, err
	}
	w, err := loadWeights(cfg, t)
	if err != nil {
		return nil, err
	}
	m := &Model{Cfg: cfg, w: w, b: b, dev: map[*float32]engine.Buffer{}, Head: w.head}
	for _, l := range w.layers {
		for _, x := range [][]float32{l.q, l.k, l.v, l.qb, l.kb, l.vb, l.o, l.ob, l.ln1g, l.ln1b, l.f1, l.f1b, l.f2, l.f2b, l.ln2g, l.ln2b} {
			if err := m.upload(x); err != nil {
				m.Close()
				return nil, err
			}
		}
	}
	for _, x := range [][]float32{w.embG, w.embB} {
		if err := m.upload(x); err != nil {
			m.Close()
			return nil, err
		}
	}
	return m, nil
}

// checkFinite refuses weights holding NaN or infinities, naming the
// tensor: such a model scores every pair NaN, which would rank silently.
func checkFinite(t map[string]safetensors.Tensor) error {
	for _, name := range slices.Sorted(maps.Keys(t)) {
		for i, x := range t[name].Data {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("bert: weight %s holds %v at element %d: refusing a model with NaN or infinite weights", name, x, i)
			}
		}
	}
	return nil
}

// Close frees the weights' copies on the backend; the model must not be
// used after.
func (m *Model) Close() {
	for _, buf := range m.dev {
		m.b.Free(buf)
	}
	clear(m.dev)
}

// upload binds a weight: a host backend aliases it (the model is not held
// twice, though the cpu backend adds a packed copy of each GEMM weight on
// AVX-512), a device backend copies it, and the buffer being read-only
// lets it keep a bfloat16 copy for Precision bf16.
func (m *Model) upload(x []float32) error {
	buf, err := engine.BindWeight(m.b, x)
	if err != nil {
		return err
	}
	m.dev[&x[0]] = buf
	return nil
}

func (m *Model) d(x []float32) engine.Buffer { return m.dev[&x[0]] }

// Batch is a padded batch: IDs[i] and Types[i] (nil: all 0) hold sequence
// i's token and token-type ids.
type Batch struct {
	IDs, Types [][]int32
}

// Forward returns the last hidden states, B × S × Hidden row-major, where S
// is the longest sequence; rows past a sequence's length are not
// meaningful.
func (m *Model) Forward(ctx context.Context, in Batch) ([]float32, int, error) {
	s, err := m.check(in)
	if err != nil {
		return nil, 0, err
	}
	be, release, err := engine.OnQueue(m.b) // concurrent batches overlap on a device with queues
	if err != nil {
		return nil, 0, err
	}
	defer release()
	a, err := m.newActs(be, len(in.IDs), s)
	if err != nil {
		return nil, 0, err
	}
	defer a.free()
	if err := m.embed(in, s, a); err != nil {
		return nil, 0, err
	}
	for i := range m.w.layers {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		if err := m.layer(&m.w.layers[i], a); err != nil {
			return nil, 0, fmt.Errorf("bert: layer %d: %w", i, err)
		}
	}
	out, err := engine.Download[float32](a.be, a.x)
	return out, s, err
}

// FirstToken extracts each sequence's first-token hidden state (the latent
// H before the classification head) from Forward's output.
func FirstToken(hidden []float32, batch, seq, h int) []float32 {
	out := make([]float32, batch*h)
	for b := 0; b < batch; b++ {
		copy(out[b*h:(b+1)*h], hidden[b*seq*h:b*seq*h+h])
	}
	return out
}

func (m *Model) check(in Batch) (int, error) {
	s := 0
	for i, ids := range in.IDs {
		if len(ids) == 0 {
			return 0, fmt.Errorf("bert: sequence %d is empty", i)
		}
		if m.Cfg.positionID(len(ids)-1) >= m.Cfg.MaxPositions {
			return 0, fmt.Errorf("bert: sequence %d has %d tokens, more than the model's positions allow", i, len(ids))
		}
		for _, id := range ids {
			if id < 0 || int(id) >= m.Cfg.VocabSize {
				return 0, fmt.Errorf("bert: sequence %d: token id %d outside the vocabulary of %d", i, id, m.Cfg.VocabSize)
			}
		}
		if in.Types != nil && len(in.Types[i]) != len(ids) {
			return 0, fmt.Errorf("bert: sequence %d: %d type ids for %d tokens", i, len(in.Types[i]), len(ids))
		}
		s = max(s, len(ids))
	}
	if s == 0 {
		return 0, fmt.Errorf("bert: empty batch")
	}
	return s, nil
}
