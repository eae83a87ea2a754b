// Package llama runs Llama-family decoders (Llama 2/3, and models of the
// same architecture) natively on gleaner's engine: token embeddings,
// RMSNorm, rotary positions (with Llama 3's rope_scaling), grouped-query
// attention over a KV cache, SwiGLU feed-forward and the LM head, with
// weights read from HuggingFace safetensors. Attention goes through the
// engine's joint-attention op, so a session can prepend per-layer memory
// keys and values (FuseRAG's memory-KV, package fuseattn) that every text
// position sees under one softmax. Sampling is greedy or by temperature.
package llama

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/gleaner-rag/gleaner/internal/safefile"
)

// Config holds the fields of a HuggingFace LlamaConfig (config.json) that
// the forward pass needs. Fields absent from the file take HuggingFace's
// documented defaults (LoadConfig): num_key_value_heads =
// num_attention_heads, head_dim = hidden_size / num_attention_heads,
// rope_theta 10000, rms_norm_eps 1e-6.
type Config struct {
	ModelType         string       `json:"model_type"`
	VocabSize         int          `json:"vocab_size"`
	Hidden            int          `json:"hidden_size"`
	Intermediate      int          `json:"intermediate_size"`
	Layers            int          `json:"num_hidden_layers"`
	Heads             int          `json:"num_attention_heads"`
	KVHeads           int          `json:"num_key_value_heads"`
	HeadDim           int          `json:"head_dim"`
	MaxPositions      int          `json:"max_position_embeddings"`
	RMSNormEps        float64      `json:"rms_norm_eps"`
	RopeTheta         float64      `json:"rope_theta"`
	RopeScaling       *RopeScaling `json:"rope_scaling,omitempty"`
	TieWordEmbeddings bool         `json:"tie_word_embeddings"`
	HiddenAct         string       `json:"hidden_act"`
	AttentionBias     bool         `json:"attention_bias,omitempty"`
	MLPBias           bool         `json:"mlp_bias,omitempty"`
	SlidingWindow     *int         `json:"sliding_window,omitempty"`
	BOSTokenID        *int         `json:"bos_token_id,omitempty"`
	EOSTokenID        TokenIDs     `json:"eos_token_id,omitempty"`
	// Tokenizer names gleaner's embedded tokenizer ("cl100k_base") for a
	// decoder folder without tokenizer.json (gleaner's random decoders of
	// real shapes); empty for HuggingFace folders.
	Tokenizer string `json:"gleaner_tokenizer,omitempty"`
}

// RopeScaling is config.json's rope_scaling; gleaner runs rope_type
// "default" and "llama3".
type RopeScaling struct {
	RopeType       string  `json:"rope_type"`
	Type           string  `json:"type,omitempty"` // older files
	Factor         float64 `json:"factor"`
	LowFreqFactor  float64 `json:"low_freq_factor"`
	HighFreqFactor float64 `json:"high_freq_factor"`
	OriginalMaxPos int     `json:"original_max_position_embeddings"`
}

// TokenIDs reads eos_token_id, which HuggingFace writes as one id or a list.
type TokenIDs []int

// UnmarshalJSON accepts a number or a list of numbers.
func (t *TokenIDs) UnmarshalJSON(b []byte) error {
	var one int
	if err := json.Unmarshal(b, &one); err == nil {
		*t = TokenIDs{one}
		return nil
	}
	var many []int
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("eos_token_id: want a token id or a list of them: %w", err)
	}
	*t = many
	return nil
}

// LoadConfig reads config.json, with HuggingFace's defaults for absent
// fields.
func LoadConfig(path string) (Config, error) {
	b, err := safefile.Read(path, safefile.MaxConfig)
	if err != nil {
		return Config{}, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return Config{}, fmt.Errorf("llama: %s: %w", path, err)
	}
	c := Config{RopeTheta: 10000, RMSNormEps: 1e-6, HiddenAct: "silu"}
	if err := json.Unmarshal(b, &c); err != nil {
		return Config{}, fmt.Errorf("llama: %s: %w", path, err)
	}
	if _, ok := raw["num_key_value_heads"]; !ok {
		c.KVHeads = c.Heads
	}
	if _, ok := raw["head_dim"]; !ok && c.Heads > 0 {
		c.HeadDim = c.Hidden / c.Heads
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("llama: %s: %w", path, err)
	}
	return c, nil
}

// Validate rejects configurations the forward pass cannot run; every
// problem is listed.
func (c *Config) Validate() error {
	var errs []error
	if c.ModelType != "llama" && c.ModelType != "mistral" {
		errs = append(errs, fmt.Errorf("model_type %q is not llama (or mistral without sliding windows)", c.ModelType))
	}
	if w := c.SlidingWindow; w != nil && *w < c.MaxPositions {
		errs = append(errs, fmt.Errorf("sliding_window %d is below max_position_embeddings %d: sliding-window attention is not supported", *w, c.MaxPositions))
	}
	if c.Hidden <= 0 || c.Intermediate <= 0 || c.Layers <= 0 || c.VocabSize <= 0 || c.MaxPositions <= 0 {
		errs = append(errs, errors.New("hidden_size, intermediate_size, num_hidden_layers, vocab_size and max_position_embeddings must be positive"))
	}
	if c.Heads <= 0 || c.KVHeads <= 0 || c.Heads%c.KVHeads != 0 {
		errs = append(errs, fmt.Errorf("num_attention_heads %d must be a positive multiple of num_key_value_heads %d", c.Heads, c.KVHeads))
	}
	if c.HeadDim <= 0 || c.HeadDim%2 != 0 {
		errs = append(errs, fmt.Errorf("head_dim %d must be positive and even", c.HeadDim))
	}
	if !(c.RMSNormEps > 0) || !(c.RopeTheta > 1) || math.IsInf(c.RopeTheta, 0) {
		errs = append(errs, fmt.Errorf("rms_norm_eps %v must be > 0 and rope_theta %v > 1", c.RMSNormEps, c.RopeTheta))
	}
	if p := c.paramCount(); p > MaxParams {
		errs = append(errs, fmt.Errorf("the shape holds %.3g parameters, more than gleaner loads (%.3g)", p, float64(MaxParams)))
	}
	if c.HiddenAct != "silu" {
		errs = append(errs, fmt.Errorf("hidden_act %q is not supported (silu)", c.HiddenAct))
	}
	if c.AttentionBias || c.MLPBias {
		errs = append(errs, errors.New("attention_bias and mlp_bias are not supported"))
	}
	if s := c.RopeScaling; s != nil {
		typ := s.RopeType
		if typ == "" {
			typ = s.Type
		}
		switch {
		case typ == "default" || typ == "":
		case typ == "llama3":
			if !(s.Factor >= 1) || !(s.LowFreqFactor > 0) || !(s.HighFreqFactor > s.LowFreqFactor) || s.OriginalMaxPos <= 0 {
				errs = append(errs, fmt.Errorf("rope_scaling llama3 needs factor ≥ 1, 0 < low_freq_factor < high_freq_factor and original_max_position_embeddings > 0, got %+v", *s))
			}
		default:
			errs = append(errs, fmt.Errorf("rope_scaling type %q is not supported (default, llama3)", typ))
		}
	}
	if c.Tokenizer != "" && c.Tokenizer != "cl100k_base" {
		errs = append(errs, fmt.Errorf("gleaner_tokenizer %q: want cl100k_base or none", c.Tokenizer))
	}
	if b := c.BOSTokenID; b != nil && (*b < 0 || *b >= c.VocabSize) {
		errs = append(errs, fmt.Errorf("bos_token_id %d is outside the vocabulary of %d", *b, c.VocabSize))
	}
	for _, id := range c.EOSTokenID {
		if id < 0 || id >= c.VocabSize {
			errs = append(errs, fmt.Errorf("eos_token_id %d is outside the vocabulary of %d", id, c.VocabSize))
		}
	}
	return errors.Join(errs...)
}

// MaxParams bounds a decoder's parameters (float32 on the backend): 2³⁶,
// 256 GiB, beyond any machine gleaner runs on and far from int overflow.
const MaxParams = 1 << 36

// paramCount is the number of weights, in float64 so that hostile sizes
// cannot overflow.
func (c *Config) paramCount() float64 {
	h, v, in, l := float64(c.Hidden), float64(c.VocabSize), float64(c.Intermediate), float64(c.Layers)
	q, kv := float64(c.Heads)*float64(c.HeadDim), float64(c.KVHeads)*float64(c.HeadDim)
	return 2*v*h + l*(2*h*q+2*h*kv+3*h*in+2*h) + h
}

// QDim and KVDim are the widths of a position's queries and of its keys
// (or values).
func (c *Config) QDim() int  { return c.Heads * c.HeadDim }
func (c *Config) KVDim() int { return c.KVHeads * c.HeadDim }

// InvFreq returns the HeadDim/2 rotary inverse frequencies θ^(−2i/d),
// rescaled as Llama 3's rope_scaling prescribes (HuggingFace's
// _compute_llama3_parameters).
func (c *Config) InvFreq() []float32 {
	half := c.HeadDim / 2
	out := make([]float32, half)
	for i := range out {
		f := math.Pow(c.RopeTheta, -2*float64(i)/float64(c.HeadDim))
		if s := c.RopeScaling; s != nil && (s.RopeType == "llama3" || s.Type == "llama3") {
			f = llama3Scale(f, s)
		}
		out[i] = float32(f)
	}
	return out
}

func llama3Scale(f float64, s *RopeScaling) float64 {
	old := float64(s.OriginalMaxPos)
	lowWave, highWave := old/s.LowFreqFactor, old/s.HighFreqFactor
	wave := 2 * math.Pi / f
	switch {
	case wave < highWave:
		return f
	case wave > lowWave:
		return f / s.Factor
	}
	smooth := (old/wave - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
	return (1-smooth)*f/s.Factor + smooth*f
}
