package bert

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gleaner-rag/gleaner/models/safetensors"
)

// RandomTensors makes seeded random weights for cfg in HuggingFace naming,
// with a classification head when withHead is set (a cross-encoder) and
// without (a bi-encoder). Scales keep activations in a useful range, so
// tests exercise every nonlinearity.
func RandomTensors(cfg Config, seed uint64, withHead bool) map[string]safetensors.Tensor {
	rng := rand.New(rand.NewPCG(seed, 2024))
	t := map[string]safetensors.Tensor{}
	add := func(name string, scale, mean float64, shape ...int) {
		t[name] = safetensors.Normal(rng, mean, scale, shape...)
	}
	pre, h, in := cfg.prefix(), cfg.Hidden, cfg.Intermediate
	add(pre+"embeddings.word_embeddings.weight", 0.5, 0, cfg.VocabSize, h)
	add(pre+"embeddings.position_embeddings.weight", 0.5, 0, cfg.MaxPositions, h)
	add(pre+"embeddings.token_type_embeddings.weight", 0.5, 0, cfg.TypeVocabSize, h)
	add(pre+"embeddings.LayerNorm.weight", 0.1, 1, h)
	add(pre+"embeddings.LayerNorm.bias", 0.1, 0, h)
	lin := func(name string, out, inDim int) { // Xavier-like: std 1.5/√in
		add(name+".weight", 1.5/math.Sqrt(float64(inDim)), 0, out, inDim)
		add(name+".bias", 0.1, 0, out)
	}
	for i := 0; i < cfg.Layers; i++ {
		l := fmt.Sprintf("%sencoder.layer.%d.", pre, i)
		lin(l+"attention.self.query", h, h)
		lin(l+"attention.self.key", h, h)
		lin(l+"attention.self.value", h, h)
		lin(l+"attention.output.dense", h, h)
		add(l+"attention.output.LayerNorm.weight", 0.1, 1, h)
		add(l+"attention.output.LayerNorm.bias", 0.1, 0, h)
		lin(l+"intermediate.dense", in, h)
		lin(l+"output.dense", h, in)
		add(l+"output.LayerNorm.weight", 0.1, 1, h)
		add(l+"output.LayerNorm.bias", 0.1, 0, h)
	}
	if withHead {
		if cfg.ModelType == "bert" {
			lin("bert.pooler.dense", h, h)
			lin("classifier", 1, h)
		} else {
			lin("classifier.dense", h, h)
			lin("classifier.out_proj", 1, h)
		}
	}
	return t
}

// Save writes model.safetensors and config.json into dir, each atomically.
func Save(dir string, cfg Config, t map[string]safetensors.Tensor) error {
	return safetensors.SaveFolder(dir, cfg, "model.safetensors", t)
}
