package llama

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/gleaner-rag/gleaner/models/safetensors"
)

// RandomTensors makes seeded random weights for cfg in HuggingFace naming
// (lm_head.weight unless the embeddings are tied). Matrices are N(0,
// 1/in), norms near 1, embeddings N(0, 1): activations stay in a range
// where every nonlinearity matters. Large shapes fill in parallel, one
// deterministic stream per tensor.
func RandomTensors(cfg Config, seed uint64) map[string]safetensors.Tensor {
	type spec struct {
		name        string
		scale, mean float64
		shape       []int
	}
	var specs []spec
	add := func(name string, scale, mean float64, shape ...int) {
		specs = append(specs, spec{name, scale, mean, shape})
	}
	h, q, kv, in := cfg.Hidden, cfg.QDim(), cfg.KVDim(), cfg.Intermediate
	lin := func(name string, out, inDim int) { add(name, 1/math.Sqrt(float64(inDim)), 0, out, inDim) }
	add("model.embed_tokens.weight", 1, 0, cfg.VocabSize, h)
	for i := 0; i < cfg.Layers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		add(p+"input_layernorm.weight", 0.1, 1, h)
		add(p+"post_attention_layernorm.weight", 0.1, 1, h)
		lin(p+"self_attn.q_proj.weight", q, h)
		lin(p+"self_attn.k_proj.weight", kv, h)
		lin(p+"self_attn.v_proj.weight", kv, h)
		lin(p+"self_attn.o_proj.weight", h, q)
		lin(p+"mlp.gate_proj.weight", in, h)
		lin(p+"mlp.up_proj.weight", in, h)
		lin(p+"mlp.down_proj.weight", h, in)
	}
	add("model.norm.weight", 0.1, 1, h)
	if !cfg.TieWordEmbeddings {
		lin("lm_head.weight", cfg.VocabSize, h)
	}
	out := make(map[string]safetensors.Tensor, len(specs))
	tensors := make([]safetensors.Tensor, len(specs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, s := range specs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			tensors[i] = safetensors.Normal(rand.New(rand.NewPCG(seed, uint64(i)+1)), s.mean, s.scale, s.shape...)
		}()
	}
	wg.Wait()
	for i, s := range specs {
		out[s.name] = tensors[i]
	}
	return out
}

// Save writes model.safetensors and config.json into dir, each atomically.
func Save(dir string, cfg Config, t map[string]safetensors.Tensor) error {
	return safetensors.SaveFolder(dir, cfg, "model.safetensors", t)
}

// TinyConfig is a small Llama (2 layers, GQA 4/2, head_dim 8, 32,768
// positions) over vocab tokens, for tests and examples.
func TinyConfig(vocab int) Config {
	eos := vocab - 1
	return Config{ModelType: "llama", VocabSize: vocab, Hidden: 32, Intermediate: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8,
		MaxPositions: 32768, RMSNormEps: 1e-5, RopeTheta: 10000, HiddenAct: "silu", EOSTokenID: TokenIDs{eos}}
}

// Llama32_1BConfig is Llama-3.2-1B's shape (16 layers × 2048, GQA 32/8,
// head_dim 64, vocab 128,256, tied embeddings, llama3 rope scaling) with
// gleaner's embedded cl100k_base tokenizer standing in for Llama 3's (whose
// first 100,256 tokens are cl100k_base's): random weights of a real shape
// for latency measurements.
func Llama32_1BConfig() Config {
	bos := 128000
	return Config{ModelType: "llama", VocabSize: 128256, Hidden: 2048, Intermediate: 8192, Layers: 16, Heads: 32, KVHeads: 8, HeadDim: 64,
		MaxPositions: 131072, RMSNormEps: 1e-5, RopeTheta: 500000, HiddenAct: "silu", TieWordEmbeddings: true,
		RopeScaling: &RopeScaling{RopeType: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 8192},
		BOSTokenID:  &bos, EOSTokenID: TokenIDs{100257}, Tokenizer: "cl100k_base"}
}
