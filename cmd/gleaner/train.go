package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sort"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models/headtrain"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func newTrain(g *globals) *cobra.Command {
	cmd := groupCommand("train", "Train the models an index holds: the cross-encoder head, SeedER's encoder")
	var dir, queries string
	var restore bool
	o := index.DefaultHeadOptions()
	head := &cobra.Command{
		Use: "head --index <dir> [--queries train.jsonl]",
		Example: `  gleaner train head --index idx/scifact
  gleaner train head --index idx/scifact --queries data/scifact-train/queries.jsonl
  gleaner train head --index idx/scifact --restore-previous`,
		Short: "Train the lexical cross-encoder's head and store it in the index",
		Long: `Train the head (dense → tanh → out) of the embedded lexical cross-encoder on groups of one
positive and BM25 hard negatives. The groups come from --queries (queries with gold ids, e.g. a training
split) or, without them, from pseudo-queries cut from node sentences. Training is seeded and reproducible.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return fmt.Errorf("--index is required")
			}
			if restore {
				h, err := index.RestorePreviousHead(cmd.Context(), dir)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "restored the previous head (%s); the one it replaced is now the previous head\n", describeHead(h))
				return nil
			}
			if queries != "" {
				qs, err := corpus.ReadQueries(queries, nil, corpus.ReadOptions{Logger: g.log})
				if err != nil {
					return err
				}
				o.Queries = qs
			}
			rep, replaced, err := trainHead(cmd.Context(), dir, o, g.log)
			if err != nil {
				return err
			}
			printTrainReport(cmd.OutOrStdout(), rep)
			if replaced != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "replaced the previous head (%s); bring it back with --restore-previous\n", describeHead(replaced))
			}
			return nil
		},
	}
	fl := head.Flags()
	fl.StringVar(&dir, "index", "", "index folder")
	fl.StringVar(&queries, "queries", "", "training queries with gold ids (default: pseudo-queries)")
	fl.BoolVar(&restore, "restore-previous", false, "swap back the head the last training replaced (no training)")
	fl.IntVar(&o.Pseudo, "pseudo", o.Pseudo, fmt.Sprintf("pseudo-queries to draw when --queries is not given (1 to %d)", index.MaxPseudo))
	fl.IntVar(&o.Epochs, "epochs", o.Epochs, fmt.Sprintf("training epochs (1 to %d)", headtrain.MaxEpochs))
	fl.IntVar(&o.Hidden, "hidden", o.Hidden, "hidden units")
	fl.Uint64Var(&o.Seed, "seed", o.Seed, "random seed")
	cmd.AddCommand(head)
	for _, b := range buildsOf(retrieve.BuildTrain) {
		cmd.AddCommand(newTrainBuild(g, b))
	}
	return cmd
}

// newTrainBuild is `gleaner train NAME` for a registered build step.
func newTrainBuild(g *globals, b retrieve.Info) *cobra.Command {
	var dir string
	var sf *settingFlags
	cmd := &cobra.Command{
		Use:   b.Name + " --index <dir>",
		Short: b.Summary,
		Long:  b.Long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return fmt.Errorf("--index is required")
			}
			cfgs, err := sf.configs(retrieve.NewBuildConfig, []string{b.Name})
			if err != nil {
				return err
			}
			return runBuild(cmd, g, dir, cfgs[0], "", "")
		},
	}
	cmd.Flags().StringVar(&dir, "index", "", "index folder")
	sf = addSettingFlags(cmd.Flags(), []retrieve.Info{b}, "train "+b.Name)
	return cmd
}

// trainHead trains on the index at dir and stores the head in it; it
// returns the head it replaced.
func trainHead(ctx context.Context, dir string, o index.HeadOptions, log *slog.Logger) (*index.HeadReport, *index.HeadFile, error) {
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		return nil, nil, err
	}
	hf, rep, err := index.TrainHead(ctx, ix, o)
	ix.Close()
	if err != nil {
		return nil, nil, err
	}
	log.Info("head trained", "groups", rep.Groups, "heldout_accuracy", round(rep.Accuracy), "bm25_accuracy", round(rep.BM25Accuracy))
	replaced, err := index.SetHead(ctx, dir, hf)
	return rep, replaced, err
}

// describeHead says in a few words how a head was trained.
func describeHead(h *index.HeadFile) string {
	src, _ := h.Training["source"].(string)
	acc, _ := h.Training["heldout_accuracy"].(float64)
	groups, _ := h.Training["groups"].(float64)
	if src == "" {
		return h.Encoder + " head"
	}
	return fmt.Sprintf("%s head trained on %.0f groups of %s, held-out accuracy %.1f%%", h.Encoder, groups, src, 100*acc)
}

// round keeps 4 significant decimals for log lines.
func round(x float64) float64 { return math.Round(x*1e4) / 1e4 }

func printTrainReport(w io.Writer, r *index.HeadReport) {
	fmt.Fprintf(w, "trained on %d groups (%s); loss %.4f → %.4f\n", r.Groups, r.Source, r.Losses[0], r.Losses[len(r.Losses)-1])
	fmt.Fprintf(w, "held-out groups %d: positive ranked first %.1f%% (bm25 feature alone %.1f%%)\n", r.HeldOut, 100*r.Accuracy, 100*r.BM25Accuracy)
	names := make([]string, 0, len(r.Ablation))
	for n := range r.Ablation {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return r.Ablation[names[i]] < r.Ablation[names[j]] })
	fmt.Fprintln(w, "ablation (held-out accuracy without the feature):")
	for _, n := range names {
		fmt.Fprintf(w, "  %-16s %.1f%% (%+.1f)\n", n, 100*r.Ablation[n], 100*(r.Ablation[n]-r.Accuracy))
	}
}
