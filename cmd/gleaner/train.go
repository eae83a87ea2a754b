package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models/headtrain"
)

func newTrain(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "train", Short: "Train model heads"}
	var dir, queries string
	o := index.DefaultHeadOptions()
	head := &cobra.Command{
		Use:   "head --index <dir> [--queries train.jsonl]",
		Short: "Train the lexical cross-encoder's head and store it in the index",
		Long: `Train the head (dense → tanh → out) of the embedded lexical cross-encoder on groups of one
positive and BM25 hard negatives. The groups come from --queries (queries with gold ids, e.g. a training
split) or, without them, from pseudo-queries cut from node sentences. Training is seeded and reproducible.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if queries != "" {
				qs, err := corpus.ReadQueries(queries, nil, corpus.ReadOptions{Logger: g.log})
				if err != nil {
					return err
				}
				o.Queries = qs
			}
			rep, err := trainHead(cmd.Context(), dir, o, g.log)
			if err != nil {
				return err
			}
			printTrainReport(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	fl := head.Flags()
	fl.StringVar(&dir, "index", "", "index folder")
	fl.StringVar(&queries, "queries", "", "training queries with gold ids (default: pseudo-queries)")
	fl.IntVar(&o.Pseudo, "pseudo", o.Pseudo, fmt.Sprintf("pseudo-queries to draw when --queries is not given (1 to %d)", index.MaxPseudo))
	fl.IntVar(&o.Epochs, "epochs", o.Epochs, fmt.Sprintf("training epochs (1 to %d)", headtrain.MaxEpochs))
	fl.IntVar(&o.Hidden, "hidden", o.Hidden, "hidden units")
	fl.Uint64Var(&o.Seed, "seed", o.Seed, "random seed")
	cmd.AddCommand(head)
	return cmd
}

// trainHead trains on the index at dir and stores the head in it.
func trainHead(ctx context.Context, dir string, o index.HeadOptions, log *slog.Logger) (*index.HeadReport, error) {
	if dir == "" {
		return nil, fmt.Errorf("--index is required")
	}
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		return nil, err
	}
	hf, rep, err := index.TrainHead(ctx, ix, o)
	ix.Close()
	if err != nil {
		return nil, err
	}
	log.Info("head trained", "groups", rep.Groups, "heldout_accuracy", rep.Accuracy, "bm25_accuracy", rep.BM25Accuracy)
	return rep, index.SetHead(ctx, dir, hf)
}

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
