package fuseattn

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/gleaner-rag/gleaner/models/safetensors"
)

// Evidence encoders an adapter set is trained for.
const (
	EncoderLSA         = "lsa"         // the index's LSA term vectors (LSAStates)
	EncoderTransformer = "transformer" // a bi-encoder folder's token states
)

// AdapterConfig describes FuseRAG's trained adapters (the adapters folder's
// config.json): the evidence encoder's width d_e, the pooling attention's
// width, the GAT's depth, and the low-rank memory-KV projections into the
// decoder's chosen layers.
type AdapterConfig struct {
	Encoder       string  `json:"evidence_encoder"` // EncoderLSA or EncoderTransformer
	Dim           int     `json:"evidence_dim"`     // d_e
	PoolDim       int     `json:"pool_dim"`         // the cross-attention pooling's query/key width
	GATLayers     int     `json:"gat_layers"`       // L_g (the paper's best: 2)
	GATSlope      float64 `json:"gat_slope"`        // LeakyReLU slope of the GAT scores
	Rank          int     `json:"rank"`             // r
	KVDim         int     `json:"kv_dim"`           // the decoder's num_key_value_heads × head_dim
	DecoderLayers int     `json:"decoder_layers"`   // the decoder's num_hidden_layers
	MemoryLayers  []int   `json:"memory_layers"`    // L_mem, the layers that attend to the memory
	LayerNormEps  float64 `json:"layer_norm_eps"`
	// EvidenceSource names the evidence space the adapters were made for:
	// an index's LSA basis (index.LSAFingerprint) or a bi-encoder folder;
	// "" skips the check.
	EvidenceSource string `json:"evidence_source,omitempty"`
}

// MaxAdapterDim bounds the adapters' widths (a rank above min(d_e, d_KV)
// adds nothing to the low-rank maps).
const MaxAdapterDim = 1 << 16

// Validate checks the configuration; every problem is listed.
func (c *AdapterConfig) Validate() error {
	var errs []error
	if c.Encoder != EncoderLSA && c.Encoder != EncoderTransformer {
		errs = append(errs, fmt.Errorf("evidence_encoder %q: want %q or %q", c.Encoder, EncoderLSA, EncoderTransformer))
	}
	if c.Dim < 1 || c.PoolDim < 1 || c.Rank < 1 || c.KVDim < 1 || c.DecoderLayers < 1 || c.GATLayers < 0 {
		errs = append(errs, fmt.Errorf("evidence_dim, pool_dim, rank, kv_dim and decoder_layers must be ≥ 1 and gat_layers ≥ 0, got %d, %d, %d, %d, %d, %d",
			c.Dim, c.PoolDim, c.Rank, c.KVDim, c.DecoderLayers, c.GATLayers))
	}
	if c.Dim > MaxAdapterDim || c.PoolDim > MaxAdapterDim || c.KVDim > MaxAdapterDim || c.Rank > min(c.Dim, c.KVDim) ||
		c.GATLayers > 64 || c.DecoderLayers > 4096 {
		errs = append(errs, fmt.Errorf("evidence_dim, pool_dim and kv_dim must be ≤ %d, rank ≤ min(evidence_dim, kv_dim), gat_layers ≤ 64 and decoder_layers ≤ 4096, got %d, %d, %d, %d, %d, %d",
			MaxAdapterDim, c.Dim, c.PoolDim, c.KVDim, c.Rank, c.GATLayers, c.DecoderLayers))
	}
	if !(c.GATSlope >= 0) || !(c.LayerNormEps > 0) {
		errs = append(errs, fmt.Errorf("gat_slope must be ≥ 0 and layer_norm_eps > 0, got %v and %v", c.GATSlope, c.LayerNormEps))
	}
	if len(c.MemoryLayers) == 0 {
		errs = append(errs, errors.New("memory_layers is empty: no decoder layer would see the memory"))
	}
	for i, l := range c.MemoryLayers {
		if l < 0 || l >= c.DecoderLayers || (i > 0 && l <= c.MemoryLayers[i-1]) {
			errs = append(errs, fmt.Errorf("memory_layers %v must be increasing layer numbers below %d", c.MemoryLayers, c.DecoderLayers))
			break
		}
	}
	return errors.Join(errs...)
}

// DefaultMemoryLayers spreads j layers evenly over a decoder of n layers,
// first and last included (the paper leaves L_mem open).
func DefaultMemoryLayers(n, j int) []int {
	j = max(1, min(j, n))
	if j == 1 {
		return []int{n - 1}
	}
	var out []int
	for i := 0; i < j; i++ {
		l := int(math.Round(float64(i) * float64(n-1) / float64(j-1)))
		if len(out) == 0 || l > out[len(out)-1] {
			out = append(out, l)
		}
	}
	return out
}

// tensorShapes lists every adapter tensor with its shape.
func (c *AdapterConfig) tensorShapes() map[string][]int {
	d := c.Dim
	s := map[string][]int{
		"pool.q.weight": {c.PoolDim, d}, "pool.k.weight": {c.PoolDim, d}, "pool.v.weight": {d, d},
		"memory.norm.weight": {d}, "memory.norm.bias": {d},
	}
	for g := 0; g < c.GATLayers; g++ {
		s[fmt.Sprintf("gat.%d.weight", g)] = []int{d, d}
		s[fmt.Sprintf("gat.%d.att", g)] = []int{2, d}
	}
	for _, l := range c.MemoryLayers {
		for _, kv := range []string{"k", "v"} {
			s[fmt.Sprintf("memory.%d.%s_a", l, kv)] = []int{d, c.Rank}
			s[fmt.Sprintf("memory.%d.%s_b", l, kv)] = []int{c.Rank, c.KVDim}
		}
	}
	return s
}

// checkTensors lists missing or misshapen tensors (extra ones are ignored).
func (c *AdapterConfig) checkTensors(t map[string]safetensors.Tensor) error {
	var errs []string
	shapes := c.tensorShapes()
	names := make([]string, 0, len(shapes))
	for n := range shapes {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		x, ok := t[n]
		switch {
		case !ok:
			errs = append(errs, fmt.Sprintf("%q is missing", n))
		case !slices.Equal(x.Shape, shapes[n]):
			errs = append(errs, fmt.Sprintf("%q has shape %v, want %v", n, x.Shape, shapes[n]))
		}
	}
	if len(errs) > 5 {
		errs = append(errs[:5], fmt.Sprintf("and %d more", len(errs)-5))
	}
	if len(errs) > 0 {
		return fmt.Errorf("fuseattn: adapter tensors do not match config.json: %v", errs)
	}
	return nil
}

// RandomAdapters makes seeded random adapter weights for c: N(0, 1/in)
// matrices, layer norm near identity. They give the memory path's real
// cost and shapes, not answers.
func RandomAdapters(c AdapterConfig, seed uint64) map[string]safetensors.Tensor {
	rng := rand.New(rand.NewPCG(seed, 0xf05e))
	shapes := c.tensorShapes()
	names := make([]string, 0, len(shapes))
	for n := range shapes {
		names = append(names, n)
	}
	slices.Sort(names) // a fixed draw order
	out := map[string]safetensors.Tensor{}
	for _, n := range names {
		sh := shapes[n]
		in := sh[len(sh)-1]
		if len(sh) == 2 && (n[len(n)-2:] == "_a" || n[len(n)-2:] == "_b") {
			in = sh[0] // A and B are stored in × out
		}
		scale, mean := 1/math.Sqrt(float64(in)), 0.0
		switch n {
		case "memory.norm.weight":
			scale, mean = 0.1, 1
		case "memory.norm.bias":
			scale = 0.1
		}
		out[n] = safetensors.Normal(rng, mean, scale, sh...)
	}
	return out
}

// SaveAdapters writes adapters.safetensors and config.json into dir, each
// atomically.
func SaveAdapters(dir string, c AdapterConfig, t map[string]safetensors.Tensor) error {
	if err := c.Validate(); err != nil {
		return err
	}
	return safetensors.SaveFolder(dir, c, "adapters.safetensors", t)
}

// LoadAdapters reads an adapters folder, checking every tensor's shape.
func LoadAdapters(dir string) (AdapterConfig, map[string]safetensors.Tensor, error) {
	var c AdapterConfig
	path := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return c, nil, fmt.Errorf("fuseattn: adapters: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, nil, fmt.Errorf("fuseattn: %s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return c, nil, fmt.Errorf("fuseattn: %s: %w", path, err)
	}
	t, err := safetensors.Read(filepath.Join(dir, "adapters.safetensors"))
	if err != nil {
		return c, nil, err
	}
	if err := c.checkTensors(t); err != nil {
		return c, nil, fmt.Errorf("%s: %w", dir, err)
	}
	return c, t, nil
}
