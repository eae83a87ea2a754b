package seeder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	encoder "github.com/gleaner-rag/gleaner/models/seeder"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// Settings are `gleaner train seeder`'s: the question files, stages 1–2
// and the training options.
type Settings struct {
	TrainFile, DevFile string // train, dev: questions with gold ids (default: the corpus folder's)
	KG                 KGOptions
	Train              TrainOptions
}

// DefaultSettings: the corpus folder's splits, kg-khop's stages, the
// paper's training.
func DefaultSettings() Settings {
	return Settings{KG: DefaultKGOptions(), Train: DefaultTrainOptions()}
}

// Params binds the training settings.
func (s *Settings) Params(p *retrieve.Params) {
	p.String(&s.TrainFile, "train", "training questions with gold ids (default: the corpus folder's queries-train.jsonl)").Local()
	p.String(&s.DevFile, "dev", "dev questions choosing the epoch (default: the corpus folder's queries-dev.jsonl)").Local()
	retrieve.GraphKinds(p, &s.KG.GraphKinds)
	s.KG.stages(p)
	so, c, t := &s.Train, &s.Train.Model, &s.Train.Train
	p.Int(&so.MaxTrain, "max-train", "train on a seeded sample of this many questions (0: all)", retrieve.AtLeast(0))
	p.Int(&t.Epochs, "epochs", fmt.Sprintf("training epochs (1 to %d)", encoder.MaxEpochs), retrieve.Within(1, encoder.MaxEpochs))
	p.Int(&t.Batch, "batch", "questions per optimiser step", retrieve.Within(1, 4096))
	p.Float(&t.LR, "lr", "peak learning rate (AdamW, 10% warm-up then cosine)", retrieve.OpenClosed(0.0, 1.0))
	p.Float(&t.WeightDecay, "weight-decay", "AdamW's decoupled weight decay, in [0,1)", halfOpen01)
	p.Float(&t.Dropout, "dropout", "dropout in the Exphormer layers, in [0,1)", halfOpen01)
	p.Int(&t.Loss.Samples, "samples", "Plackett–Luce subsets sampled per question (M ≥ 2: the baseline is their mean)", retrieve.Within(2, encoder.MaxSamples))
	p.Int(&t.Loss.K, "subset", "size of each sampled subset (k)", retrieve.AtLeast(1))
	p.Bool(&t.Loss.Listwise, "listwise", "score the ranking head by softmax cross-entropy over the candidates instead of BPR's mean over pairs (an extension, docs/methods.md §3.5)")
	p.Bool(&t.HitsFirst, "checkpoint-hits", "keep the epoch with the best dev Hits@1 (ties: Recall@20) instead of the best Recall@20 (ties: Hits@1)")
	p.Uint64(&t.Seed, "seed", "random seed (sampling, shuffling, dropout, initial weights, expander cycles)")
	p.Int(&c.In, "pca", "PCA components of the node, relation and question embeddings (at most the index's dimensions)", retrieve.Within(1, encoder.MaxWidth))
	p.Int(&c.Hidden, "hidden", "hidden width (divisible by --heads)", retrieve.Within(1, encoder.MaxWidth))
	p.Int(&c.Heads, "heads", "attention heads", retrieve.AtLeast(1))
	p.Int(&c.Layers, "layers", "Exphormer layers", retrieve.AtLeast(1))
	p.Int(&c.Cycles, "cycles", "Hamiltonian expander cycles (0: none)", retrieve.AtLeast(0))
	p.Bool(&c.Virtual, "virtual-node", "add the query virtual node")
	p.Bool(&c.HopGate, "hop-gate", "add the gated hop-number embedding")
	p.Bool(&c.Local, "local", "add the local relation-gated message block beside the attention (false: attention only)")
	p.Bool(&so.QuestionWords, "question-words", "learn a bag of the questions' words (beyond the paper's frozen embeddings; false: the paper's inputs only)")
	p.Bool(&so.RelationIDs, "relation-ids", "learn an embedding per relation and direction (beyond the paper's frozen embeddings)")
	p.Bool(&so.Paths, "paths", "train the learned text side first: its per-hop relation reading drives the K-hop filter and adds path features to the encoder (an extension, docs/methods.md §3.5; false: the paper's filter and inputs)")
	p.Int(&so.PathDim, "paths-dim", "--paths: the text side's width", retrieve.Within(1, encoder.MaxWidth))
	p.Int(&so.PathTrain.Epochs, "paths-epochs", fmt.Sprintf("--paths: the text side's training epochs (1 to %d)", encoder.MaxEpochs), retrieve.Within(1, encoder.MaxEpochs))
	p.Float(&so.PathTrain.LR, "paths-lr", "--paths: the text side's learning rate (Adam)", retrieve.OpenClosed(0.0, 1.0))
	p.Int(&so.PathMinCount, "paths-min-count", "--paths: a question word or word pair joins the text side's vocabulary when this many training questions use it", retrieve.AtLeast(1))
	p.Int(&so.MinWordCount, "min-word-count", "--question-words: a word joins the vocabulary when this many training questions use it", retrieve.AtLeast(1))
	p.Check(func() error {
		if c.Hidden%c.Heads != 0 {
			return &retrieve.ParamError{Name: "heads", Value: fmt.Sprint(c.Heads), Msg: fmt.Sprintf("hidden %d must be divisible by it", c.Hidden)}
		}
		return nil
	})
}

func halfOpen01(x float64) error {
	if !(x >= 0 && x < 1) {
		return errors.New("want a value in [0, 1)")
	}
	return nil
}

func init() {
	retrieve.Must(retrieve.RegisterBuild(retrieve.BuildDef[Settings]{Name: Section, Group: retrieve.BuildTrain, Section: Section,
		Summary: "Train SeedER's encoder on a knowledge-graph index and store it in the index",
		Long: `Train SeedER's query-adaptive Exphormer encoder (docs/methods.md §3.1): every training question's
candidate graph comes from stages 1–2 (--k0, --khop-quotas, --khop-cap, --graph-kind, as kg-khop; method
seeder reuses the settings stored with the encoder), node, relation and question embeddings are reduced by
PCA (--pca components), and the policy and scoring heads are trained by REINFORCE over Plackett–Luce
samples (--samples subsets of --subset) plus a ranking loss (listwise; BPR with --listwise=false), with
AdamW, warm-up then cosine, gradient clipping, keeping the earliest epoch with the best dev Hits@1 (ties:
Recall@20; --checkpoint-hits=false: the best Recall@20, ties Hits@1). Each epoch prints its loss, mean
sampled reward, dev Recall@20 and Hits@1. --train and --dev default to the corpus folder's
queries-train.jsonl and queries-dev.jsonl. Training is seeded and reproducible; the encoder replaces any
earlier one in the index, which method seeder then uses.

Extensions (docs/methods.md §3.5), on by default: --paths first trains a learned text side that reads
each question's relations hop by hop (printing its epochs); it drives the K-hop filter's relation term and
adds path features to the encoder (kg-paths ranks by it alone). --listwise scores the ranking head by a
softmax cross-entropy instead of BPR's pair mean, --checkpoint-hits keeps the best dev Hits@1. The paper's
setup: --paths=false --listwise=false --checkpoint-hits=false --question-words=false --relation-ids=false.`,
		Defaults: DefaultSettings, Params: (*Settings).Params, Build: build,
		Host: "training runs on the host (forward and gradients in float32 loops; the engine has no backward ops); method seeder's inference runs on the backend"}))
}

// build trains and stores the encoder.
func build(ctx context.Context, env retrieve.BuildEnv, dir string, s Settings) (string, error) {
	out := env.Out
	if out == nil {
		out = io.Discard
	}
	so := s.Train
	so.Model.Seed = so.Train.Seed // one seed: weights and expander cycles too
	so.PathTrain.Seed = so.Train.Seed
	if st, err := os.Stat(dir); err == nil && st.Mode().Perm()&0o200 == 0 {
		return "", fmt.Errorf("index %s is read-only (mode %v): training would have nowhere to store the encoder; make it writable first", dir, st.Mode().Perm())
	}
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		return "", err
	}
	defer ix.Close()
	train, err := questions(ix, s.TrainFile, corpus.TrainQueriesFile, "--train", env)
	if err != nil {
		return "", err
	}
	dev, err := questions(ix, s.DevFile, corpus.DevQueriesFile, "--dev", env)
	if err != nil {
		return "", err
	}
	so.Logger = env.Logger
	so.Progress = func(r encoder.EpochReport) { printEpoch(out, r, so.Train.Epochs) }
	so.PathProgress = func(r encoder.PathEpoch) {
		fmt.Fprintf(out, "text side epoch %d/%d: loss %.4f, dev hits@1 %.3f\n", r.Epoch, so.PathTrain.Epochs, r.Loss, r.DevHits1)
	}
	nTrain := len(train)
	if so.MaxTrain > 0 {
		nTrain = min(nTrain, so.MaxTrain)
	}
	fmt.Fprintf(out, "building candidate graphs for %d training and %d dev questions\n", nTrain, len(dev))
	f, err := Train(ctx, ix, retrieve.Env{Backend: env.Backend, Logger: env.Logger}, s.KG, so, train, dev)
	if err != nil {
		return "", err
	}
	// stored from the index opened before training: if another writer (a
	// second train seeder) finished meanwhile, this fails with
	// index.ErrChanged instead of silently replacing its work
	if err := Store(ctx, ix, dir, f); err != nil {
		return "", err
	}
	best := f.Epochs[0]
	for _, r := range f.Epochs {
		if r.Best {
			best = r
		}
	}
	return fmt.Sprintf("kept epoch %d (dev recall@20 %.3f, hits@1 %.3f)", best.Epoch, best.DevRecall, best.DevHits1), nil
}

func printEpoch(w io.Writer, r encoder.EpochReport, epochs int) {
	best := ""
	if r.Best {
		best = "  (best so far)"
	}
	fmt.Fprintf(w, "epoch %d/%d  loss %.4f (rl %.4f, bpr %.4f)  reward %.3f  dev recall@20 %.3f  hits@1 %.3f  %.1fs%s\n",
		r.Epoch, epochs, r.Loss, r.RL, r.BPR, r.Reward, r.DevRecall, r.DevHits1, r.Elapsed.Seconds(), best)
}

// questions reads path, or the corpus folder's file of that name.
func questions(ix *index.Index, path, name, setting string, env retrieve.BuildEnv) ([]corpus.Query, error) {
	if path == "" {
		if ix.Meta.Source == "" {
			return nil, fmt.Errorf("the index records no corpus folder; give %s", setting)
		}
		path = filepath.Join(ix.Meta.Source, name)
	}
	qs, err := corpus.ReadQueries(path, nil, corpus.ReadOptions{Logger: env.Logger})
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
