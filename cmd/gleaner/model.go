package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/models/testmodel"
)

func newModel(g *globals) *cobra.Command {
	cmd := groupCommand("model", "Model utilities: random model folders for tests and benchmarks")
	var out, corpusDir string
	var o testmodel.Options
	var dec decoderFlags
	random := &cobra.Command{
		Use: "random -o <dir> [--kind bert|xlm-roberta|llama|fuserag] [--cross] [--corpus <dir>]",
		Example: `  gleaner model random -o models/tiny-ce --corpus data/scifact
  gleaner model random -o models/tiny-bi --corpus data/scifact --cross=false
  gleaner model random --kind llama -o models/tiny-llm --corpus data/2wiki
  gleaner model random --kind llama --shape llama-3.2-1b -o models/llama-1b-random
  gleaner model random --kind fuserag -o models/adapters --decoder models/tiny-llm --index idx/2wiki`,
		Short: "Write a random-weight model folder: an encoder, a Llama decoder or FuseRAG adapters",
		Long: `Write a random-weight model for tests and benchmarks; no pretrained weights are reachable here.

bert, xlm-roberta: a tiny encoder (tokenizer.json, config.json, model.safetensors, model.onnx); the
vocabulary is built from --corpus (its node texts) and single characters. --cross adds a
classification head (a cross-encoder for re2); without it the model is a bi-encoder.

llama: a Llama-family decoder. --shape tiny (default) has a byte-level tokenizer over --corpus's
frequent words and model.onnx with the same weights; --shape llama-3.2-1b has Llama-3.2-1B's shape
(16 layers × 2048, GQA 32/8; 4.9 GB of float32 weights) with cl100k_base standing in for its
tokenizer. --hidden, --layers, --heads, --kv-heads and --intermediate override the shape's sizes.

fuserag: FuseRAG adapters (pooling, GAT, low-rank memory K/V) for --decoder's layers and key width
and an evidence encoder: the LSA term vectors of --index (default), or --evidence-dim wide
transformer states (--evidence transformer).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("-o <dir> is required")
			}
			switch o.Kind {
			case "llama":
				return writeRandomDecoder(cmd, g, out, corpusDir, dec)
			case "fuserag":
				return writeRandomAdapters(cmd, out, dec)
			}
			var texts []string
			if corpusDir != "" {
				c, err := corpus.Load(corpusDir, corpus.ReadOptions{Logger: g.log})
				if err != nil {
					return err
				}
				texts = testmodel.NodeTexts(c)
			}
			cfg, err := testmodel.Write(out, texts, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %s, %d layers × %d hidden, vocabulary %d, head %v\n", out, cfg.ModelType, cfg.Layers, cfg.Hidden, cfg.VocabSize, o.Cross)
			return nil
		},
	}
	fl := random.Flags()
	fl.StringVarP(&out, "out", "o", "", "model folder to write")
	fl.StringVar(&corpusDir, "corpus", "", "gleaner JSONL corpus whose words form the vocabulary")
	fl.StringVar(&o.Kind, "kind", "bert", "bert, xlm-roberta, llama or fuserag")
	fl.BoolVar(&o.Cross, "cross", true, "add a classification head (cross-encoder)")
	fl.IntVar(&o.Hidden, "hidden", 32, "hidden size")
	fl.IntVar(&o.Layers, "layers", 2, "layers")
	fl.IntVar(&o.Heads, "heads", 4, "attention heads")
	fl.Uint64Var(&o.Seed, "seed", 1, "random seed")
	addDecoderFlags(fl, &dec, &o)
	cmd.AddCommand(random)
	return cmd
}
