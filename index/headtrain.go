package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/models/headtrain"
	"github.com/gleaner-rag/gleaner/models/lexical"
)

// HeadOptions configures training of the embedded lexical cross-encoder's
// head (models/headtrain does the gradient work).
// Every field is used as given; DefaultHeadOptions holds the defaults.
type HeadOptions struct {
	headtrain.Options
	Queries   []corpus.Query // training queries with gold ids; none: pseudo-queries
	Pseudo    int            // pseudo-queries to draw when Queries is empty (default 2000)
	Negatives int            // hard negatives per positive, from BM25 (default 7)
	HeldOut   float64        // share of groups kept for the report (default 0.2)
}

// DefaultHeadOptions are what `gleaner index` trains with: 2,000
// pseudo-queries, 7 hard negatives each, 20 % held out.
func DefaultHeadOptions() HeadOptions {
	return HeadOptions{Options: headtrain.DefaultOptions(), Pseudo: 2000, Negatives: 7, HeldOut: 0.2}
}

// MaxPseudo bounds the pseudo-queries drawn (each costs a BM25 search).
const MaxPseudo = 1_000_000

func (o HeadOptions) validate() error {
	if (len(o.Queries) == 0 && (o.Pseudo < 1 || o.Pseudo > MaxPseudo)) || o.Negatives < 1 || !(o.HeldOut > 0 && o.HeldOut < 1) {
		return fmt.Errorf("index: head: need 1 ≤ pseudo-queries ≤ %d (without training queries), negatives ≥ 1 and 0 < held-out < 1; got pseudo %d, negatives %d, held-out %v (start from DefaultHeadOptions)",
			MaxPseudo, o.Pseudo, o.Negatives, o.HeldOut)
	}
	return o.Options.Validate()
}

// HeadReport describes a trained head.
type HeadReport struct {
	Groups, HeldOut int
	Source          string
	Losses          []float64
	// Accuracy is the share of held-out groups whose positive scores
	// highest; BM25Accuracy the same for the bm25 feature alone.
	Accuracy, BM25Accuracy float64
	// Ablation is the held-out accuracy with each feature replaced by its
	// mean (0 after standardisation), by feature name.
	Ablation map[string]float64
}

// TrainLexical builds training groups over ix (a positive and BM25 hard
// negatives per query), fits the feature standardisation, trains the head
// and returns it ready for SetHead, with a report.
func TrainHead(ctx context.Context, ix *Index, o HeadOptions) (*HeadFile, *HeadReport, error) {
	if err := o.validate(); err != nil {
		return nil, nil, err
	}
	rng := rand.New(rand.NewPCG(o.Seed, 31))
	qs, source := o.Queries, "training queries"
	if len(qs) == 0 {
		qs, source = pseudoQueries(ix, o.Pseudo, rng), "pseudo-queries from node sentences"
	}
	raw, err := rawGroups(ctx, ix, qs, o.Negatives, rng)
	if err != nil {
		return nil, nil, err
	}
	enc := &lexical.Encoder{}
	k, f := o.Negatives, lexical.NumFeatures
	enc.FitStandardization(flatten(raw), len(raw)*(1+k))
	for _, g := range raw {
		for r := 0; r <= k; r++ {
			for j := 0; j < f; j++ {
				g.Latents[r*f+j] = (g.Latents[r*f+j] - enc.Mean[j]) / enc.Std[j]
			}
		}
	}
	split := len(raw) - int(o.HeldOut*float64(len(raw)))
	res, err := headtrain.Train(ctx, raw[:split], f, k, o.Options)
	if err != nil {
		return nil, nil, err
	}
	rep := evaluate(res, raw[split:], k, f)
	rep.Groups, rep.HeldOut, rep.Source, rep.Losses = split, len(raw)-split, source, res.Losses
	h := res.Head
	hf := &HeadFile{Encoder: "lexical", Features: lexical.FeatureNames, Mean: enc.Mean, Std: enc.Std,
		Hidden: h.Hidden, Dense: h.Dense, DenseB: h.DenseB, Out: h.Out, OutB: h.OutB,
		Training: map[string]any{"groups": split, "source": source, "negatives": k, "epochs": o.Epochs, "seed": o.Seed,
			"final_loss": res.Losses[len(res.Losses)-1], "heldout_accuracy": rep.Accuracy}}
	return hf, rep, nil
}

func flatten(gs []headtrain.Group) []float32 {
	var out []float32
	for _, g := range gs {
		out = append(out, g.Latents...)
	}
	return out
}

// pseudoQueries draws nodes and turns one sentence of each into a query by
// keeping a random ~60% of its words, in order, so a query is rarely a
// verbatim substring of its node.
func pseudoQueries(ix *Index, n int, rng *rand.Rand) []corpus.Query {
	var qs []corpus.Query
	for tries := 0; len(qs) < n && tries < 4*n; tries++ {
		node := rng.IntN(ix.N())
		sents := strings.FieldsFunc(ix.Text(node), func(r rune) bool { return r == '.' || r == '?' || r == '!' || r == ';' })
		if len(sents) == 0 {
			continue
		}
		words := strings.Fields(sents[rng.IntN(len(sents))])
		var kept []string
		for _, w := range words {
			if rng.Float64() < 0.6 {
				kept = append(kept, w)
			}
		}
		if len(lexical.Analyze(strings.Join(kept, " "))) < 3 {
			continue
		}
		qs = append(qs, corpus.Query{ID: fmt.Sprintf("pseudo-%d", len(qs)), Text: strings.Join(kept, " "), Gold: []string{ix.NodeID(node)}})
	}
	return qs
}

// rawGroups makes one group per (query, gold node): the gold node's raw
// features, then k hard negatives (BM25's best non-gold nodes), padded with
// random nodes.
func rawGroups(ctx context.Context, ix *Index, qs []corpus.Query, k int, rng *rand.Rand) ([]headtrain.Group, error) {
	m := ix.InteractionModel()
	f := lexical.NumFeatures
	var out []headtrain.Group
	for qi, q := range qs {
		if qi%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		gold := map[int32]bool{}
		for _, id := range q.Gold {
			if v, ok := ix.Lookup(id); ok {
				gold[v] = true
			}
		}
		if ix.N()-len(gold) < k { // hardNegatives draws k distinct non-gold nodes
			return nil, fmt.Errorf("index: head: %d nodes leave fewer than the %d negatives a training group needs: %w", ix.N(), k, headtrain.ErrTooFewGroups)
		}
		negs := hardNegatives(ix, q.Text, gold, k, rng)
		st := m.Prepare(q.Text)
		for g := range gold {
			lat := make([]float32, (1+k)*f)
			m.Features(st, int(g), lat[:f])
			for j, nn := range negs {
				m.Features(st, int(nn), lat[(1+j)*f:(2+j)*f])
			}
			out = append(out, headtrain.Group{Latents: lat})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("index: head: no query had a gold node in the index: %w", headtrain.ErrTooFewGroups)
	}
	return out, nil
}

// hardNegatives mixes what the head meets when reranking a first stage's
// top 100: the best non-gold BM25 results (about half), results sampled
// from the rest of BM25's top 100, and random nodes.
// The caller guarantees k ≤ N − |gold|, or the last loop would not end.
func hardNegatives(ix *Index, text string, gold map[int32]bool, k int, rng *rand.Rand) []int32 {
	var ranked []int32
	for _, h := range ix.BM25.Search(text, 100+len(gold)) {
		if !gold[h.Index] {
			ranked = append(ranked, h.Index)
		}
	}
	top := min((k+1)/2, len(ranked))
	negs := append([]int32(nil), ranked[:top]...)
	picked := map[int32]bool{}
	for _, v := range negs {
		picked[v] = true
	}
	rest := ranked[top:]
	for tries := 0; len(negs) < k-k/4 && len(rest) > 0 && tries < 4*k; tries++ {
		if v := rest[rng.IntN(len(rest))]; !picked[v] {
			picked[v] = true
			negs = append(negs, v)
		}
	}
	for len(negs) < k {
		if v := int32(rng.IntN(ix.N())); !gold[v] && !picked[v] {
			picked[v] = true
			negs = append(negs, v)
		}
	}
	return negs
}

// evaluate measures held-out accuracy, the bm25 feature alone, and one
// ablation per feature.
func evaluate(res *headtrain.Result, held []headtrain.Group, k, f int) *HeadReport {
	rep := &HeadReport{Ablation: map[string]float64{}}
	rep.Accuracy = accuracy(held, k, f, func(l []float32, out []float32) { res.Head.Score(l, 1+k, out) })
	rep.BM25Accuracy = accuracy(held, k, f, func(l []float32, out []float32) {
		for r := 0; r <= k; r++ {
			out[r] = l[r*f]
		}
	})
	for j, name := range lexical.FeatureNames {
		rep.Ablation[name] = accuracy(held, k, f, func(l []float32, out []float32) {
			c := append([]float32(nil), l...)
			for r := 0; r <= k; r++ {
				c[r*f+j] = 0
			}
			res.Head.Score(c, 1+k, out)
		})
	}
	return rep
}

func accuracy(gs []headtrain.Group, k, f int, score func(l, out []float32)) float64 {
	if len(gs) == 0 {
		return 0
	}
	out := make([]float32, 1+k)
	hits := 0
	for _, g := range gs {
		score(g.Latents, out)
		best := true
		for r := 1; r <= k; r++ {
			if out[r] >= out[0] {
				best = false
			}
		}
		if best {
			hits++
		}
	}
	return float64(hits) / float64(len(gs))
}
