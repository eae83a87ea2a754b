package testmodel

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gleaner-rag/gleaner/models/llama"
	"github.com/gleaner-rag/gleaner/models/tokenize"
)

// Decoder shapes.
const (
	ShapeTiny     = "tiny"         // a few layers, a byte-level tokenizer over the texts' frequent words, and model.onnx
	ShapeLlama32B = "llama-3.2-1b" // Llama-3.2-1B's shape (4.9 GB of float32 weights), cl100k_base standing in for its tokenizer
)

// DecoderOptions shape a random decoder. Zero sizes take the shape's.
type DecoderOptions struct {
	Shape                                        string
	Hidden, Layers, Heads, KVHeads, Intermediate int
	Words                                        int // tiny: frequent words merged into tokens (default 300)
	Seed                                         uint64
}

// WriteDecoder creates a random Llama-family decoder folder at dir:
// config.json, model.safetensors and the tokenizer (tokenizer.json, or
// the embedded cl100k_base named in config.json), and for the tiny shape
// model.onnx with the same weights (for ONNX Runtime parity checks).
func WriteDecoder(dir string, texts []string, o DecoderOptions) (llama.Config, error) {
	var cfg llama.Config
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return cfg, err
	}
	switch o.Shape {
	case ShapeTiny, "":
		words := o.Words
		if words == 0 {
			words = 300
		}
		vocab, err := tokenize.WriteByteLevel(filepath.Join(dir, "tokenizer.json"), frequentWords(texts, words))
		if err != nil {
			return cfg, err
		}
		cfg = llama.TinyConfig(vocab)
	case ShapeLlama32B:
		cfg = llama.Llama32_1BConfig()
	default:
		return cfg, fmt.Errorf("testmodel: decoder shape %q: want %s or %s", o.Shape, ShapeTiny, ShapeLlama32B)
	}
	override(&cfg, o)
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("testmodel: %w", err)
	}
	seed := o.Seed
	if seed == 0 {
		seed = 1
	}
	t := llama.RandomTensors(cfg, seed)
	if err := llama.Save(dir, cfg, t); err != nil {
		return cfg, err
	}
	if o.Shape == ShapeLlama32B {
		return cfg, nil
	}
	f, err := os.Create(filepath.Join(dir, "model.onnx"))
	if err != nil {
		return cfg, err
	}
	if err := llama.WriteONNX(f, cfg, t); err != nil {
		f.Close()
		return cfg, err
	}
	return cfg, f.Close()
}

// override applies the sizes given explicitly.
func override(cfg *llama.Config, o DecoderOptions) {
	set := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	set(&cfg.Hidden, o.Hidden)
	set(&cfg.Layers, o.Layers)
	set(&cfg.Heads, o.Heads)
	set(&cfg.KVHeads, o.KVHeads)
	set(&cfg.Intermediate, o.Intermediate)
	if o.Hidden != 0 || o.Heads != 0 {
		cfg.HeadDim = cfg.Hidden / cfg.Heads
	}
}
