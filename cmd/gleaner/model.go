package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/models/testmodel"
)

func newModel(g *globals) *cobra.Command {
	cmd := groupCommand("model", "Model utilities: random model folders for tests and benchmarks")
	var out, corpusDir string
	var force bool
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
			if err := checkKindFlags(cmd.Flags(), o.Kind); err != nil {
				return err
			}
			var summary string
			err := writeFolder(cmd.Context(), out, force, dec.decoder, func(dir string) error {
				var err error
				switch o.Kind {
				case "llama":
					summary, err = writeRandomDecoder(g, dir, corpusDir, dec)
				case "fuserag":
					summary, err = writeRandomAdapters(dir, dec)
				default:
					if o.Intermediate = dec.intermediate; dec.fl.Changed("intermediate") && o.Intermediate < 1 {
						return fmt.Errorf("--intermediate must be ≥ 1, got %d", o.Intermediate)
					}
					summary, err = writeRandomEncoder(g, dir, corpusDir, o)
				}
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %s\n", out, summary)
			return nil
		},
	}
	fl := random.Flags()
	fl.StringVarP(&out, "out", "o", "", "model folder to write (a new folder; --force replaces an existing one)")
	fl.BoolVar(&force, "force", false, "replace an existing -o folder")
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

// maxEncoderParams bounds a random encoder's layer weights (2³¹ floats,
// 8 GiB), so a mistyped size is an error, not an exhausted machine;
// XLM-R-large's shape needs 3·10⁸.
const maxEncoderParams = 1 << 31

// writeRandomEncoder writes a bert or xlm-roberta model into dir (tiny by
// default; --hidden, --layers, --heads, --intermediate make any shape).
func writeRandomEncoder(g *globals, dir, corpusDir string, o testmodel.Options) (string, error) {
	for name, v := range map[string]int{"hidden": o.Hidden, "layers": o.Layers, "heads": o.Heads, "intermediate": o.Intermediate} {
		if v < 0 || (v == 0 && name != "intermediate") {
			return "", fmt.Errorf("--%s must be ≥ 1, got %d", name, v)
		}
	}
	inter := o.Intermediate
	if inter == 0 {
		inter = 2 * o.Hidden
	}
	if p := float64(o.Layers) * (4*float64(o.Hidden)*float64(o.Hidden) + 2*float64(o.Hidden)*float64(inter)); p > maxEncoderParams {
		return "", fmt.Errorf("--layers %d × (--hidden %d, --intermediate %d) is %.3g weights; at most %d", o.Layers, o.Hidden, inter, p, maxEncoderParams)
	}
	texts, err := corpusTexts(g, corpusDir)
	if err != nil {
		return "", err
	}
	cfg, err := testmodel.Write(dir, texts, o)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s, %d layers × %d hidden, vocabulary %d, head %v", cfg.ModelType, cfg.Layers, cfg.Hidden, cfg.VocabSize, o.Cross), nil
}

// corpusTexts reads --corpus's node texts (none without it).
func corpusTexts(g *globals, dir string) ([]string, error) {
	if dir == "" {
		return nil, nil
	}
	c, err := corpus.Load(dir, corpus.ReadOptions{Logger: g.log})
	if err != nil {
		return nil, err
	}
	return testmodel.NodeTexts(c), nil
}

// modelKindFlags lists the flags each kind reads (besides -o, --seed, --force).
var modelKindFlags = map[string][]string{
	"bert":        {"corpus", "cross", "hidden", "layers", "heads", "intermediate"},
	"xlm-roberta": {"corpus", "cross", "hidden", "layers", "heads", "intermediate"},
	"llama":       {"corpus", "shape", "hidden", "layers", "heads", "kv-heads", "intermediate"},
	"fuserag":     {"decoder", "index", "evidence", "evidence-dim", "rank", "pool-dim", "gat-layers", "memory-count", "memory-layers"},
}

// checkKindFlags refuses an unknown kind and flags the kind does not read.
func checkKindFlags(fl *pflag.FlagSet, kind string) error {
	own, ok := modelKindFlags[kind]
	if !ok {
		return fmt.Errorf("--kind %q: want bert, xlm-roberta, llama or fuserag", kind)
	}
	var bad error
	fl.Visit(func(f *pflag.Flag) {
		switch {
		case bad != nil, slices.Contains([]string{"out", "seed", "force", "kind", "log-level", "backend"}, f.Name), slices.Contains(own, f.Name):
		default:
			bad = fmt.Errorf("--%s does not apply to --kind %s (it reads: --%s)", f.Name, kind, strings.Join(own, ", --"))
		}
	})
	return bad
}

// writeFolder writes a model folder through a temporary sibling renamed
// into place, so a failure or an interrupt never leaves a half-written or
// mixed folder. An existing out is refused unless force; a folder the
// writer reads (src) is never replaced.
func writeFolder(ctx context.Context, out string, force bool, src string, write func(dir string) error) error {
	if src != "" && sameDir(out, src) {
		return fmt.Errorf("-o %s is the folder the model is made from (--decoder): write the new one elsewhere", out)
	}
	if ents, err := os.ReadDir(out); err == nil && len(ents) > 0 && !force {
		return fmt.Errorf("-o %s exists and is not empty: choose a new folder, or --force to replace it", out)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("-o %s: %w", out, err)
	}
	parent := filepath.Dir(filepath.Clean(out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, ".tmp-"+filepath.Base(out)+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // gone after the rename; removes the partial folder on failure
	if err := write(tmp); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil { // empty, or --force
		return err
	}
	return os.Rename(tmp, out)
}

// sameDir reports whether two paths name one folder.
func sameDir(a, b string) bool {
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	if err1 == nil && err2 == nil {
		return os.SameFile(ia, ib)
	}
	aa, _ := filepath.Abs(a)
	bb, _ := filepath.Abs(b)
	return aa == bb
}
