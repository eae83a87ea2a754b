package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models/seeder"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// seederFlags are train seeder's settings, starting from the library's
// defaults.
type seederFlags struct {
	dir, train, dev, kinds, quotas string
	o                              retrieve.Options
	so                             retrieve.SeederTrainOptions
}

func newTrainSeeder(g *globals) *cobra.Command {
	f := &seederFlags{o: retrieve.DefaultOptions(), so: retrieve.DefaultSeederTrainOptions()}
	cmd := &cobra.Command{
		Use: "seeder --index <dir> [--train F --dev F]",
		Example: `  gleaner train seeder --index idx/pq2h
  gleaner train seeder --index idx/metaqa2 --max-train 4000 --epochs 8`,
		Short: "Train SeedER's encoder on a knowledge-graph index and store it in the index",
		Long: `Train SeedER's query-adaptive Exphormer encoder (docs/methods.md §3.1): every training question's
candidate graph comes from stages 1–2 (--k0, --khop-quotas, --khop-cap, --graph-kind, as kg-khop; method
seeder reuses the settings stored with the encoder), node,
relation and question embeddings are reduced by PCA (--pca components), and the policy and scoring heads
are trained by REINFORCE over Plackett–Luce samples (--samples subsets of --subset) plus BPR, with AdamW,
warm-up then cosine, gradient clipping, keeping the earliest epoch with the best dev Recall@20 (ties: the
best dev Hits@1). Each epoch prints its loss, mean sampled reward, dev Recall@20 and Hits@1. --train and --dev default to the corpus folder's
queries-train.jsonl and queries-dev.jsonl. Training is seeded and reproducible; the encoder replaces any
earlier one in the index, which method seeder then uses.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), cmd.OutOrStdout(), g)
		},
	}
	fl := cmd.Flags()
	c, t := &f.so.Model, &f.so.Train
	fl.StringVar(&f.dir, "index", "", "index folder (a knowledge graph: gleaner import pathquestion|metaqa, then gleaner index)")
	fl.StringVar(&f.train, "train", "", "training questions with gold ids (default: the corpus folder's queries-train.jsonl)")
	fl.StringVar(&f.dev, "dev", "", "dev questions choosing the epoch (default: the corpus folder's queries-dev.jsonl)")
	fl.IntVar(&f.so.MaxTrain, "max-train", 0, "train on a seeded sample of this many questions (0: all)")
	fl.IntVar(&t.Epochs, "epochs", t.Epochs, fmt.Sprintf("training epochs (1 to %d)", seeder.MaxEpochs))
	fl.IntVar(&t.Batch, "batch", t.Batch, "questions per optimiser step")
	fl.Float64Var(&t.LR, "lr", t.LR, "peak learning rate (AdamW, 10% warm-up then cosine)")
	fl.Float64Var(&t.WeightDecay, "weight-decay", t.WeightDecay, "AdamW's decoupled weight decay")
	fl.Float64Var(&t.Dropout, "dropout", t.Dropout, "dropout in the Exphormer layers")
	fl.IntVar(&t.Loss.Samples, "samples", t.Loss.Samples, "Plackett–Luce subsets sampled per question (M ≥ 2)")
	fl.IntVar(&t.Loss.K, "subset", t.Loss.K, "size of each sampled subset (k)")
	fl.Uint64Var(&t.Seed, "seed", t.Seed, "random seed (sampling, shuffling, dropout, initial weights)")
	fl.IntVar(&c.In, "pca", c.In, "PCA components of the node, relation and question embeddings")
	fl.IntVar(&c.Hidden, "hidden", c.Hidden, "hidden width (divisible by --heads)")
	fl.IntVar(&c.Heads, "heads", c.Heads, "attention heads")
	fl.IntVar(&c.Layers, "layers", c.Layers, "Exphormer layers")
	fl.IntVar(&c.Cycles, "cycles", c.Cycles, "Hamiltonian expander cycles (0: none)")
	fl.BoolVar(&c.Virtual, "virtual-node", c.Virtual, "add the query virtual node")
	fl.BoolVar(&c.HopGate, "hop-gate", c.HopGate, "add the gated hop-number embedding")
	fl.BoolVar(&c.Local, "local", c.Local, "add the local relation-gated message block beside the attention (false: attention only)")
	fl.BoolVar(&f.so.QuestionWords, "question-words", f.so.QuestionWords, "learn a bag of the questions' words (beyond the paper's frozen embeddings; false: the paper's inputs only)")
	fl.BoolVar(&f.so.RelationIDs, "relation-ids", f.so.RelationIDs, "learn an embedding per relation and direction (beyond the paper's frozen embeddings)")
	fl.IntVar(&f.so.MinWordCount, "min-word-count", f.so.MinWordCount, "--question-words: a word joins the vocabulary when this many training questions use it")
	fl.StringVar(&f.kinds, "graph-kind", "", "comma-separated edge kinds the expansion follows (default: all)")
	fl.IntVar(&f.o.KG.K0, "k0", f.o.KG.K0, "dictionary-linked seeds kept (the rest filled by cosine)")
	fl.StringVar(&f.quotas, "khop-quotas", "200,200,100", "nodes added at each hop, comma-separated")
	fl.IntVar(&f.o.KG.KHop.Cap, "khop-cap", f.o.KG.KHop.Cap, "the candidate graph's size, seeds included")
	return cmd
}

// run trains and stores the encoder.
func (f *seederFlags) run(ctx context.Context, w io.Writer, g *globals) error {
	if f.dir == "" {
		return fmt.Errorf("--index is required")
	}
	var err error
	if f.o.KG.KHop.Quotas, err = parseQuotas(f.quotas); err != nil {
		return err
	}
	if err := checkKGFlags(f.o.KG); err != nil {
		return err
	}
	if err := f.checkFlags(); err != nil {
		return err
	}
	f.so.Model.Seed = f.so.Train.Seed // one --seed: weights and expander cycles too
	f.o.Backend, f.o.GraphKinds = g.be, splitList(f.kinds)
	if st, err := os.Stat(f.dir); err == nil && st.Mode().Perm()&0o200 == 0 {
		return fmt.Errorf("index %s is read-only (mode %v): training would have nowhere to store the encoder; make it writable first", f.dir, st.Mode().Perm())
	}
	ix, err := index.Open(f.dir, store.OpenOptions{})
	if err != nil {
		return err
	}
	defer ix.Close()
	train, err := f.questions(ix, f.train, corpus.TrainQueriesFile, g)
	if err != nil {
		return err
	}
	dev, err := f.questions(ix, f.dev, corpus.DevQueriesFile, g)
	if err != nil {
		return err
	}
	f.so.Logger = g.log
	f.so.Progress = func(r seeder.EpochReport) {
		best := ""
		if r.Best {
			best = "  (best so far)"
		}
		fmt.Fprintf(w, "epoch %d/%d  loss %.4f (rl %.4f, bpr %.4f)  reward %.3f  dev recall@20 %.3f  hits@1 %.3f  %.1fs%s\n",
			r.Epoch, f.so.Train.Epochs, r.Loss, r.RL, r.BPR, r.Reward, r.DevRecall, r.DevHits1, r.Elapsed.Seconds(), best)
	}
	nTrain := len(train)
	if f.so.MaxTrain > 0 {
		nTrain = min(nTrain, f.so.MaxTrain)
	}
	fmt.Fprintf(w, "building candidate graphs for %d training and %d dev questions\n", nTrain, len(dev))
	sf, err := retrieve.TrainSeeder(ctx, ix, f.o, f.so, train, dev)
	if err != nil {
		return err
	}
	// stored from the index opened before training: if another writer
	// (a second train seeder) finished meanwhile, this fails with
	// index.ErrChanged instead of silently replacing its work
	if err := ix.StoreSeeder(ctx, f.dir, sf); err != nil {
		return err
	}
	best := sf.Epochs[0]
	for _, r := range sf.Epochs {
		if r.Best {
			best = r
		}
	}
	fmt.Fprintf(w, "kept epoch %d (dev recall@20 %.3f, hits@1 %.3f); stored in %s — query it with --method seeder\n", best.Epoch, best.DevRecall, best.DevHits1, f.dir)
	return nil
}

// questions reads path, or the corpus folder's file of that name.
func (f *seederFlags) questions(ix *index.Index, path, name string, g *globals) ([]corpus.Query, error) {
	if path == "" {
		if ix.Meta.Source == "" {
			return nil, fmt.Errorf("the index records no corpus folder; give --train and --dev")
		}
		path = filepath.Join(ix.Meta.Source, name)
	}
	qs, err := corpus.ReadQueries(path, nil, corpus.ReadOptions{Logger: g.log})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w (knowledge-graph imports write %s and %s; give --train and --dev otherwise)", err, corpus.TrainQueriesFile, corpus.DevQueriesFile)
	}
	if err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("%s holds no questions", path)
	}
	for _, q := range qs {
		if len(q.Gold) == 0 {
			return nil, fmt.Errorf("%s: question %q has no gold answer ids: training and the epoch choice need them", path, q.ID)
		}
		for _, id := range q.Gold {
			if _, ok := ix.Lookup(id); !ok {
				return nil, fmt.Errorf("%s: question %q: gold id %q is not in the index %s", path, q.ID, id, ix.Dir)
			}
		}
	}
	return qs, nil
}

// checkFlags names the flag a bad setting came from, before any work.
func (f *seederFlags) checkFlags() error {
	c, t := f.so.Model, f.so.Train
	switch {
	case c.In < 1 || c.In > seeder.MaxWidth:
		return fmt.Errorf("--pca must be in [1, %d] (and at most the index's dimensions), got %d", seeder.MaxWidth, c.In)
	case c.Heads < 1:
		return fmt.Errorf("--heads must be ≥ 1, got %d", c.Heads)
	case c.Hidden < 1 || c.Hidden > seeder.MaxWidth || c.Hidden%c.Heads != 0:
		return fmt.Errorf("--hidden must be in [1, %d] and divisible by --heads %d, got %d", seeder.MaxWidth, c.Heads, c.Hidden)
	case len(f.o.KG.KHop.Quotas) > 64:
		return fmt.Errorf("--khop-quotas: at most 64 hops, got %d", len(f.o.KG.KHop.Quotas))
	case t.Loss.Samples < 2 || t.Loss.Samples > seeder.MaxSamples:
		return fmt.Errorf("--samples must be in [2, %d] (the baseline is their mean), got %d", seeder.MaxSamples, t.Loss.Samples)
	case t.Loss.K < 1:
		return fmt.Errorf("--subset must be ≥ 1, got %d", t.Loss.K)
	case !(t.LR > 0 && t.LR <= 1):
		return fmt.Errorf("--lr must be in (0, 1], got %v", t.LR)
	case !(t.Dropout >= 0 && t.Dropout < 1):
		return fmt.Errorf("--dropout must be in [0, 1), got %v", t.Dropout)
	case !(t.WeightDecay >= 0 && t.WeightDecay < 1):
		return fmt.Errorf("--weight-decay must be in [0, 1), got %v", t.WeightDecay)
	case f.so.MaxTrain < 0:
		return fmt.Errorf("--max-train must be ≥ 0 (0: all), got %d", f.so.MaxTrain)
	case f.so.MinWordCount < 1:
		return fmt.Errorf("--min-word-count must be ≥ 1, got %d", f.so.MinWordCount)
	}
	return nil
}
