package seeder

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models/lexical"
	encoder "github.com/gleaner-rag/gleaner/models/seeder"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// TrainOptions configure TrainSeeder.
type TrainOptions struct {
	// Model is the network's shape; TrainSeeder sets its MaxHop to the
	// number of hop quotas, and Words and Relations from QuestionWords and
	// RelationIDs.
	Model encoder.Config
	Train encoder.TrainOptions
	// MaxTrain caps the training questions (a seeded sample); 0 keeps all.
	MaxTrain int
	// PCASample caps the node vectors the PCA is fitted on (a seeded
	// sample, with every relation and training question); ≥ 2.
	PCASample int
	// QuestionWords learns a bag of the training questions' words (those
	// in at least MinWordCount questions, the MaxWords most frequent) and
	// RelationIDs one embedding per relation and direction: learned inputs
	// beyond the paper's frozen embeddings (encoder.Config.Words, Relations).
	QuestionWords bool
	RelationIDs   bool
	MinWordCount  int
	MaxWords      int
	// Paths trains the learned text side first (docs/methods.md §3.5, an
	// extension; false: the paper's filter and inputs): its reading of each
	// question drives the K-hop filter's relation term and adds path
	// features to the encoder. PathDim is its width; features (question
	// words and word pairs) join its vocabulary when PathMinCount training
	// questions use them, at most PathMaxFeatures.
	Paths           bool
	PathDim         int
	PathMinCount    int
	PathMaxFeatures int
	PathTrain       encoder.PathTrainOptions
	PathProgress    func(encoder.PathEpoch) // may be nil
	Logger          *slog.Logger
	Progress        func(encoder.EpochReport) // may be nil
}

// DefaultTrainOptions are the paper's settings on the default model,
// with the extensions on: the learned text side, the listwise ranking
// loss and Hits@1-first checkpoints.
func DefaultTrainOptions() TrainOptions {
	t := encoder.DefaultTrainOptions()
	t.Loss.Listwise, t.HitsFirst = true, true // extensions (docs/methods.md §3.5)
	pt := encoder.DefaultPathTrainOptions()
	pt.Epochs = 20 // PQ-2H dev: the text side's Hits@1 still rose at 10 (0.884), 0.905 by 17–20
	return TrainOptions{Model: encoder.DefaultConfig(), Train: t, PCASample: 50000,
		QuestionWords: true, RelationIDs: true, MinWordCount: 3, MaxWords: 5000,
		Paths: true, PathDim: 64, PathMinCount: 2, PathMaxFeatures: 50000, PathTrain: pt}
}

func (o TrainOptions) validate() error {
	if o.MaxTrain < 0 || o.PCASample < 2 {
		return fmt.Errorf("seeder training needs max-train ≥ 0 (0: all) and a PCA sample ≥ 2, got %d and %d", o.MaxTrain, o.PCASample)
	}
	if o.QuestionWords && (o.MinWordCount < 1 || o.MaxWords < 1) {
		return fmt.Errorf("seeder question words need a minimum count ≥ 1 and a vocabulary ≥ 1, got %d and %d", o.MinWordCount, o.MaxWords)
	}
	return nil
}

// Train trains SeedER's encoder on the index's knowledge graph:
// stages 1–2 (o, as kg-khop) give every question's candidate graph,
// PCA is fitted on node, relation and training-question embeddings, and
// the encoder is trained on train with dev Recall@k choosing the epoch.
// Training questions whose candidates hold no gold answer carry no
// gradient (zero reward, no BPR pair) and are left out; dev keeps all.
func Train(ctx context.Context, ix *index.Index, env retrieve.Env, o KGOptions, so TrainOptions, train, dev []corpus.Query) (*File, error) {
	if err := so.validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(so.Train.Seed, 0xda7a))
	if so.MaxTrain > 0 && len(train) > so.MaxTrain { // the sample first: the vocabulary is the sample's
		train = slices.Clone(train)
		rng.Shuffle(len(train), func(i, j int) { train[i], train[j] = train[j], train[i] })
		train = train[:so.MaxTrain]
	}
	var vocab []string
	if so.QuestionWords {
		vocab = questionVocabulary(train, so.MinWordCount, so.MaxWords)
	}
	so.Model.Words, so.Model.Relations, so.Model.MaxHop = len(vocab), 0, len(o.KHop.Quotas)
	if so.RelationIDs {
		so.Model.Relations = ix.Meta.Relations
	}
	if err := so.Model.Validate(); err != nil {
		return nil, err
	}
	if err := so.Train.Validate(); err != nil {
		return nil, err
	}
	if so.Model.In > ix.Meta.Dims {
		return nil, fmt.Errorf("seeder: %d PCA components of %d-dimensional vectors", so.Model.In, ix.Meta.Dims)
	}
	if err := o.Validate(); err != nil { // before the expensive candidate graphs
		return nil, err
	}
	log := so.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	km, err := newKG(ix, env, o, true)
	if err != nil {
		return nil, err
	}
	if err := km.prepare(ctx); err != nil {
		return nil, err
	}
	var pf *pathFile
	if so.Paths {
		if pf, err = trainPaths(ctx, km, so, train, dev, log); err != nil {
			return nil, err
		}
		km.paths = pf.model
		so.Model.Paths = len(o.KHop.Quotas)
		if err := so.Model.Validate(); err != nil {
			return nil, err
		}
	}
	trC, err := collectCandidates(ctx, km, train, "train", log)
	if err != nil {
		return nil, err
	}
	devC, err := collectCandidates(ctx, km, dev, "dev", log)
	if err != nil {
		return nil, err
	}
	pca, err := fitSeederPCA(km, trC, so, rng)
	if err != nil {
		return nil, err
	}
	in, err := newSeederInputs(km, pca, so.Model, vocab)
	if err != nil {
		return nil, err
	}
	trEx := examples(km, in, trC, true)
	devEx := examples(km, in, devC, false)
	log.Info("seeder: training", "questions", len(trEx), "left_out_no_gold_candidate", len(trC)-len(trEx), "dev", len(devEx))
	if len(trEx) == 0 {
		return nil, fmt.Errorf("seeder: no training question has a gold answer among its candidates")
	}
	start := time.Now()
	model, reps, err := encoder.Train(ctx, so.Model, pca, so.Train, trEx, devEx, so.Progress)
	if err != nil {
		return nil, err
	}
	f := &File{Config: so.Model, Model: model, Vocab: vocab, K0: o.K0, Quotas: o.KHop.Quotas, Cap: o.KHop.Cap, Kinds: o.GraphKinds, Epochs: reps,
		Train: map[string]any{"questions": len(trEx), "left_out": len(trC) - len(trEx), "dev": len(devEx), "options": so.Train, "seconds": time.Since(start).Seconds()}}
	if pf != nil {
		f.Paths, f.PathVocab, f.PathEpochs, f.paths = &pf.model.sc.Config, pf.vocab, pf.epochs, pf.model
	}
	return f, nil
}

// questionCandidates is one question's stage-2 output kept for training:
// the candidates without the all-node similarity array.
type questionCandidates struct {
	c    *kgCandidates
	text string
	gold []int32
}

// collectCandidates runs stages 1–2 for every question, logging progress.
func collectCandidates(ctx context.Context, km *kgMethod, qs []corpus.Query, split string, log *slog.Logger) ([]questionCandidates, error) {
	out := make([]questionCandidates, 0, len(qs))
	last := time.Now()
	for i, q := range qs {
		c, err := km.candidates(ctx, retrieve.Query{ID: q.ID, Text: q.Text})
		if err != nil {
			return nil, fmt.Errorf("seeder: %s question %q: %w", split, q.ID, err)
		}
		c.sims = nil // N values per question would not fit many questions
		var gold []int32
		for _, id := range q.Gold {
			if v, ok := km.ix.Lookup(id); ok {
				gold = append(gold, v)
			}
		}
		out = append(out, questionCandidates{c, q.Text, gold})
		if time.Since(last) > 10*time.Second {
			log.Info("seeder: candidate graphs", "split", split, "done", i+1, "of", len(qs))
			last = time.Now()
		}
	}
	return out, nil
}

// fitSeederPCA fits the PCA on a sample of node vectors, every relation
// name and every training question.
func fitSeederPCA(km *kgMethod, tr []questionCandidates, so TrainOptions, rng *rand.Rand) (*encoder.PCA, error) {
	ix := km.ix
	var rows [][]float32
	nodes := rng.Perm(ix.N())
	for _, v := range nodes[:min(len(nodes), so.PCASample)] {
		rows = append(rows, ix.Vector(v))
	}
	for _, v := range km.relUnit {
		if v != nil {
			rows = append(rows, v)
		}
	}
	for _, q := range tr {
		rows = append(rows, q.c.qv)
	}
	return encoder.FitPCA(rows, ix.Meta.Dims, so.Model.In)
}

// examples builds the encoder's inputs and targets; with dropEmpty,
// questions with no gold candidate are left out.
func examples(km *kgMethod, in *seederInputs, qcs []questionCandidates, dropEmpty bool) []encoder.Example {
	var out []encoder.Example
	for _, qc := range qcs {
		g := in.graph(km, qc.c, qc.text)
		gold := map[int32]bool{}
		for _, v := range qc.gold {
			gold[v] = true
		}
		t := encoder.Target{NumGold: len(gold)}
		for i, v := range g.IDs {
			if gold[v] {
				t.Gold = append(t.Gold, i)
			}
		}
		if dropEmpty && len(t.Gold) == 0 {
			continue
		}
		out = append(out, encoder.Example{G: g, T: t})
	}
	return out
}

// questionVocabulary is the index analyzer's terms found in at least
// minCount training questions, the maxWords most frequent (ties by term).
func questionVocabulary(qs []corpus.Query, minCount, maxWords int) []string {
	df := map[string]int{}
	for _, q := range qs {
		seen := map[string]bool{}
		for _, t := range lexical.Analyze(q.Text) {
			if !seen[t] {
				seen[t] = true
				df[t]++
			}
		}
	}
	var vocab []string
	for t, n := range df {
		if n >= minCount {
			vocab = append(vocab, t)
		}
	}
	slices.SortFunc(vocab, func(a, b string) int { return cmp.Or(cmp.Compare(df[b], df[a]), cmp.Compare(a, b)) })
	return vocab[:min(len(vocab), maxWords)]
}
