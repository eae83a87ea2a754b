package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/fuseattn"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models/llama"
	"github.com/gleaner-rag/gleaner/models/testmodel"
)

// decoderFlags are model random's settings for --kind llama and fuserag.
type decoderFlags struct {
	fl                         *pflag.FlagSet
	o                          *testmodel.Options
	shape                      string
	kvHeads, intermediate      int
	decoder, index, evidence   string
	evidenceDim, rank          int
	poolDim, gatLayers, layerN int
	memoryLayers               string
}

func addDecoderFlags(fl *pflag.FlagSet, d *decoderFlags, o *testmodel.Options) {
	d.fl, d.o = fl, o
	fl.StringVar(&d.shape, "shape", testmodel.ShapeTiny, "llama: tiny or llama-3.2-1b")
	fl.IntVar(&d.kvHeads, "kv-heads", 0, "llama: key/value heads (default: the shape's)")
	fl.IntVar(&d.intermediate, "intermediate", 0, "feed-forward width (llama default: the shape's; bert, xlm-roberta: 2 × --hidden)")
	fl.StringVar(&d.decoder, "decoder", "", "fuserag: the decoder folder the adapters project into")
	fl.StringVar(&d.index, "index", "", "fuserag: the index whose LSA term vectors are the evidence states")
	fl.StringVar(&d.evidence, "evidence", fuseattn.EncoderLSA, "fuserag: evidence encoder, lsa or transformer")
	fl.IntVar(&d.evidenceDim, "evidence-dim", 0, "fuserag: transformer evidence states' width (the bi-encoder's hidden size)")
	fl.IntVar(&d.rank, "rank", 16, "fuserag: r, the memory projection's rank")
	fl.IntVar(&d.poolDim, "pool-dim", 64, "fuserag: the pooling attention's query/key width")
	fl.IntVar(&d.gatLayers, "gat-layers", 2, "fuserag: L_g, GAT layers over the evidence graph")
	fl.IntVar(&d.layerN, "memory-count", 4, "fuserag: J, memory layers spread evenly over the decoder (unless --memory-layers)")
	fl.StringVar(&d.memoryLayers, "memory-layers", "", "fuserag: the decoder layers that attend to the memory, comma-separated (default: --memory-count evenly spread)")
}

// changed returns v when the flag was given, else 0 (the shape's size).
func (d *decoderFlags) changed(name string, v int) int {
	if d.fl.Changed(name) {
		return v
	}
	return 0
}

func writeRandomDecoder(g *globals, dir, corpusDir string, d decoderFlags) (string, error) {
	texts, err := corpusTexts(g, corpusDir)
	if err != nil {
		return "", err
	}
	o := testmodel.DecoderOptions{Shape: d.shape, Hidden: d.changed("hidden", d.o.Hidden), Layers: d.changed("layers", d.o.Layers),
		Heads: d.changed("heads", d.o.Heads), KVHeads: d.kvHeads, Intermediate: d.intermediate, Seed: d.o.Seed}
	for name, v := range map[string]int{"hidden": o.Hidden, "layers": o.Layers, "heads": o.Heads, "kv-heads": o.KVHeads, "intermediate": o.Intermediate} {
		if v < 0 || (v == 0 && d.fl.Changed(name)) {
			return "", fmt.Errorf("--%s must be ≥ 1, got %d", name, v)
		}
	}
	if d.shape == "" {
		return "", fmt.Errorf("--shape is empty: want %s or %s", testmodel.ShapeTiny, testmodel.ShapeLlama32B)
	}
	cfg, err := testmodel.WriteDecoder(dir, texts, o)
	if err != nil && (strings.Contains(err.Error(), "head_dim") || strings.Contains(err.Error(), "num_key_value_heads")) {
		return "", fmt.Errorf("%w (head_dim = --hidden / --heads must be even; --heads must be a multiple of --kv-heads)", err)
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("llama decoder, %d layers × %d hidden, GQA %d/%d, vocabulary %d", cfg.Layers, cfg.Hidden, cfg.Heads, cfg.KVHeads, cfg.VocabSize), nil
}

func writeRandomAdapters(dir string, d decoderFlags) (string, error) {
	if d.decoder == "" {
		return "", fmt.Errorf("--kind fuserag needs --decoder <folder>: the adapters project into its layers")
	}
	dc, err := llama.LoadConfig(filepath.Join(d.decoder, "config.json"))
	if err != nil {
		return "", err
	}
	c := fuseattn.AdapterConfig{Encoder: d.evidence, PoolDim: d.poolDim, GATLayers: d.gatLayers, GATSlope: 0.2, Rank: d.rank,
		KVDim: dc.KVDim(), DecoderLayers: dc.Layers, LayerNormEps: 1e-5}
	if c.Dim, err = evidenceDim(d, &c.EvidenceSource); err != nil {
		return "", err
	}
	if c.MemoryLayers, err = memoryLayers(d, dc.Layers); err != nil {
		return "", err
	}
	if err := c.Validate(); err != nil {
		return "", err
	}
	if err := fuseattn.SaveAdapters(dir, c, fuseattn.RandomAdapters(c, d.o.Seed)); err != nil {
		return "", err
	}
	return fmt.Sprintf("FuseRAG adapters, %s evidence states of %d, rank %d, memory layers %v of %d", c.Encoder, c.Dim, c.Rank, c.MemoryLayers, c.DecoderLayers), nil
}

func evidenceDim(d decoderFlags, source *string) (int, error) {
	switch d.evidence {
	case fuseattn.EncoderLSA:
		if d.evidenceDim != 0 {
			return 0, fmt.Errorf("--evidence-dim applies to --evidence transformer: lsa states take their width from --index")
		}
		if d.index == "" {
			return 0, fmt.Errorf("--kind fuserag with lsa evidence states needs --index <dir> (their width is the index's LSA dimensions)")
		}
		ix, err := index.Open(d.index, store.OpenOptions{})
		if err != nil {
			return 0, err
		}
		defer ix.Close()
		if ix.LSA == nil {
			return 0, fmt.Errorf("index %s has %s vectors, not LSA: use --evidence transformer --evidence-dim N", d.index, ix.Meta.Embedder)
		}
		*source = ix.LSAFingerprint()
		return ix.Meta.Dims, nil
	case fuseattn.EncoderTransformer:
		if d.evidenceDim < 1 {
			return 0, fmt.Errorf("--evidence transformer needs --evidence-dim ≥ 1 (the bi-encoder's hidden size)")
		}
		return d.evidenceDim, nil
	}
	return 0, fmt.Errorf("--evidence %q: want lsa or transformer", d.evidence)
}

func memoryLayers(d decoderFlags, n int) ([]int, error) {
	if d.memoryLayers == "" {
		j := d.layerN
		if !d.fl.Changed("memory-count") {
			j = min(j, n) // the default on a shallow decoder: every layer
		}
		if j < 1 || j > n {
			return nil, fmt.Errorf("--memory-count must be in [1, %d] (the decoder's layers), got %d", n, j)
		}
		return fuseattn.DefaultMemoryLayers(n, j), nil
	}
	var out []int
	for _, it := range strings.Split(d.memoryLayers, ",") {
		var l int
		if _, err := fmt.Sscan(strings.TrimSpace(it), &l); err != nil || fmt.Sprint(l) != strings.TrimSpace(it) {
			return nil, fmt.Errorf("--memory-layers: %q is not a layer number", it)
		}
		out = append(out, l)
	}
	return out, nil
}
