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
	random := &cobra.Command{
		Use: "random -o <dir> [--kind bert|xlm-roberta] [--cross] [--corpus <dir>]",
		Example: `  gleaner model random -o models/tiny-ce --corpus data/scifact
  gleaner model random -o models/tiny-bi --corpus data/scifact --cross=false`,
		Short: "Write a tiny random-weight transformer (tokenizer.json, config.json, model.safetensors, model.onnx)",
		Long: `Write a tiny random-weight model for tests and benchmarks; no pretrained weights are reachable here.
The vocabulary is built from --corpus (its node texts) and single characters. --cross adds a
classification head (a cross-encoder for re2); without it the model is a bi-encoder.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("-o <dir> is required")
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
	fl.StringVar(&o.Kind, "kind", "bert", "bert or xlm-roberta")
	fl.BoolVar(&o.Cross, "cross", true, "add a classification head (cross-encoder)")
	fl.IntVar(&o.Hidden, "hidden", 32, "hidden size")
	fl.IntVar(&o.Layers, "layers", 2, "layers")
	fl.IntVar(&o.Heads, "heads", 4, "attention heads")
	fl.Uint64Var(&o.Seed, "seed", 1, "random seed")
	cmd.AddCommand(random)
	return cmd
}
