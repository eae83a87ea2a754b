// Package bert runs BERT- and XLM-R-family encoders natively on gleaner's
// engine: embeddings, self-attention with padding masks, GELU feed-forward
// and post-LayerNorm, with weights read from HuggingFace safetensors, and
// the sequence-classification head (dense → tanh → out) as a models.Head.
// Every op goes through an engine.Backend, so the CUDA backend accelerates
// this path without changes here.
package bert

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gleaner-rag/gleaner/internal/safefile"
)

// Config holds the fields of a HuggingFace config.json that the forward
// pass needs.
type Config struct {
	ModelType     string   `json:"model_type"` // "bert" or "xlm-roberta"
	VocabSize     int      `json:"vocab_size"`
	Hidden        int      `json:"hidden_size"`
	Layers        int      `json:"num_hidden_layers"`
	Heads         int      `json:"num_attention_heads"`
	Intermediate  int      `json:"intermediate_size"`
	MaxPositions  int      `json:"max_position_embeddings"`
	TypeVocabSize int      `json:"type_vocab_size"`
	LayerNormEps  float64  `json:"layer_norm_eps"`
	PadTokenID    int      `json:"pad_token_id"`
	HiddenAct     string   `json:"hidden_act"`
	NumLabels     int      `json:"num_labels,omitempty"`
	Architectures []string `json:"architectures,omitempty"`
}

// LoadConfig reads config.json.
func LoadConfig(path string) (Config, error) {
	var c Config
	b, err := safefile.Read(path, safefile.MaxConfig)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("bert: %s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("bert: %s: %w", path, err)
	}
	return c, nil
}

// Validate rejects configurations the forward pass cannot run.
func (c *Config) Validate() error {
	var errs []error
	if c.ModelType != "bert" && c.ModelType != "xlm-roberta" {
		errs = append(errs, fmt.Errorf("model_type %q is not bert or xlm-roberta", c.ModelType))
	}
	if c.Hidden <= 0 || c.Layers <= 0 || c.Heads <= 0 || c.Hidden%c.Heads != 0 {
		errs = append(errs, fmt.Errorf("hidden_size %d must be a positive multiple of num_attention_heads %d", c.Hidden, c.Heads))
	}
	if c.VocabSize <= 0 || c.MaxPositions <= 0 || c.Intermediate <= 0 || c.TypeVocabSize <= 0 {
		errs = append(errs, errors.New("vocab_size, max_position_embeddings, intermediate_size and type_vocab_size must be positive"))
	}
	if p := c.paramCount(); p > MaxParams {
		errs = append(errs, fmt.Errorf("the shape holds %.3g parameters, more than gleaner loads (%.3g): a config from a real model, not %d layers of width %d", p, float64(MaxParams), c.Layers, c.Hidden))
	}
	if c.MaxPositions > maxPositions || c.TypeVocabSize > maxTypeVocab {
		errs = append(errs, fmt.Errorf("max_position_embeddings %d and type_vocab_size %d must be at most %d and %d", c.MaxPositions, c.TypeVocabSize, maxPositions, maxTypeVocab))
	}
	if c.HiddenAct != "" && c.HiddenAct != "gelu" {
		errs = append(errs, fmt.Errorf("hidden_act %q is not supported (gelu)", c.HiddenAct))
	}
	if c.LayerNormEps == 0 {
		c.LayerNormEps = 1e-12
	}
	return errors.Join(errs...)
}

// Bounds a config must keep before anything is allocated for it: the
// largest BERT-family encoders (XLM-R XXL) hold about 10⁹ parameters.
const (
	MaxParams    = 4e9
	maxPositions = 1 << 20
	maxTypeVocab = 1 << 10
)

// paramCount is the encoder's parameter count, in float64 so no product
// of absurd sizes overflows.
func (c *Config) paramCount() float64 {
	h, i := float64(c.Hidden), float64(c.Intermediate)
	embed := (float64(c.VocabSize) + float64(c.MaxPositions) + float64(c.TypeVocabSize)) * h
	return embed + float64(c.Layers)*(4*h*h+2*h*i)
}

// prefix is the weight-name prefix of the encoder.
func (c *Config) prefix() string {
	if c.ModelType == "xlm-roberta" {
		return "roberta."
	}
	return "bert."
}

// positionID is the position embedding row of token p of a sequence:
// XLM-R counts from padding_idx + 1 (as RoBERTa's create_position_ids_from_input_ids).
func (c *Config) positionID(p int) int {
	if c.ModelType == "xlm-roberta" {
		return c.PadTokenID + 1 + p
	}
	return p
}
