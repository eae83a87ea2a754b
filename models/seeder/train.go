package seeder

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// TrainOptions configure training (docs/methods.md §3.1 stage 4).
type TrainOptions struct {
	Epochs      int     // 15
	Batch       int     // graphs per step (16)
	LR          float64 // peak learning rate (3e-3)
	WeightDecay float64 // AdamW's decoupled decay (1e-5)
	Clip        float64 // global gradient-norm clip (1)
	Warmup      float64 // share of steps warming up linearly, then cosine (0.1)
	Dropout     float64 // 0.1
	Select      int     // k of dev Recall@k, the checkpoint criterion (20)
	// HitsFirst keeps the epoch with the best dev Hits@1 (ties: Recall@k)
	// instead of the best Recall@k (ties: Hits@1): Recall@20 saturates
	// early once the candidates hold the answer.
	HitsFirst bool
	Loss      LossOptions
	Seed      uint64
}

// DefaultTrainOptions are the paper's PRIME settings but for the rate and
// epochs: 3e-3 and 15 (the top of its 10–15) gave PQ-2H dev Hits@1 0.44
// where 1e-3 gave 0.32 (benchmarks/RESULTS.md).
func DefaultTrainOptions() TrainOptions {
	return TrainOptions{Epochs: 15, Batch: 16, LR: 3e-3, WeightDecay: 1e-5, Clip: 1, Warmup: 0.1, Dropout: 0.1, Select: 20, Loss: DefaultLossOptions(), Seed: 1}
}

// MaxEpochs bounds Epochs; MaxSamples bounds Loss.Samples (each sample
// costs O(k·candidates) per question and step).
const (
	MaxEpochs  = 1000
	MaxSamples = 1024
)

// Validate checks the options; zero values are errors, not defaults.
func (o TrainOptions) Validate() error {
	var errs []error
	if o.Epochs < 1 || o.Epochs > MaxEpochs {
		errs = append(errs, fmt.Errorf("seeder: epochs must be 1..%d, got %d", MaxEpochs, o.Epochs))
	}
	if o.Batch < 1 || o.Batch > 4096 {
		errs = append(errs, fmt.Errorf("seeder: batch must be 1..4096, got %d", o.Batch))
	}
	if !(o.LR > 0 && o.LR <= 1) || !(o.WeightDecay >= 0 && o.WeightDecay < 1) || !(o.Clip > 0) || !(o.Warmup >= 0 && o.Warmup < 1) || !(o.Dropout >= 0 && o.Dropout < 1) {
		errs = append(errs, fmt.Errorf("seeder: need 0 < lr ≤ 1, 0 ≤ weight decay < 1, clip > 0, 0 ≤ warm-up < 1, 0 ≤ dropout < 1; got %g, %g, %g, %g, %g", o.LR, o.WeightDecay, o.Clip, o.Warmup, o.Dropout))
	}
	if o.Select < 1 || o.Loss.K < 1 || o.Loss.Samples < 2 || o.Loss.Samples > MaxSamples || !(o.Loss.Temp > 0) || !(o.Loss.BPRWeight >= 0) {
		errs = append(errs, fmt.Errorf("seeder: need select ≥ 1, k ≥ 1, samples ≥ 2 (the baseline is their mean), temperature > 0, BPR weight ≥ 0; got %d, %d, %d, %g, %g", o.Select, o.Loss.K, o.Loss.Samples, o.Loss.Temp, o.Loss.BPRWeight))
	}
	return errors.Join(errs...)
}

// Example is one training or dev query: its candidate graph and target.
type Example struct {
	G *Graph
	T Target
}

// EpochReport is one epoch's progress.
type EpochReport struct {
	Epoch     int           `json:"epoch"`
	Loss      float64       `json:"loss"`
	RL        float64       `json:"rl"`
	BPR       float64       `json:"bpr"`
	Reward    float64       `json:"reward"`     // mean sampled recall
	DevRecall float64       `json:"dev_recall"` // dev Recall@Select
	DevHits1  float64       `json:"dev_hits1"`  // dev Hits@1 (the first selected node is gold)
	Best      bool          `json:"best"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	// GradNorm is each tensor's gradient L2 norm before clipping, the mean
	// over the epoch's steps: which inputs the objective actually trains.
	GradNorm map[string]float64 `json:"grad_norm,omitempty"`
}

// Train fits a model of config c on train, keeping the weights of the
// earliest epoch with the best dev Recall@Select; among epochs tied on it
// (recall saturates on small graphs), the best dev Hits@1 wins, so the
// scoring head's later progress is not thrown away. progress (may be nil)
// sees every epoch. Training is seeded: the same inputs give the same
// weights.
func Train(ctx context.Context, c Config, pca *PCA, o TrainOptions, train, dev []Example, progress func(EpochReport)) (*Model, []EpochReport, error) {
	if err := errors.Join(c.Validate(), o.Validate()); err != nil {
		return nil, nil, err
	}
	if len(train) == 0 || len(dev) == 0 {
		return nil, nil, fmt.Errorf("seeder: training needs training and dev queries (got %d and %d)", len(train), len(dev))
	}
	for i, ex := range append(append([]Example(nil), train...), dev...) {
		if err := ex.G.Validate(c); err != nil {
			return nil, nil, fmt.Errorf("seeder: example %d: %w", i, err)
		}
	}
	w, err := NewWeights[float32](c)
	if err != nil {
		return nil, nil, err
	}
	tr := &trainer{c: c, o: o, w: w, opt: newAdamW(c), rng: rand.New(rand.NewPCG(o.Seed, 0x7ea1))}
	tr.stepsPerEpoch = (len(train) + o.Batch - 1) / o.Batch
	tr.steps = o.Epochs * tr.stepsPerEpoch
	best := &Model{Config: c, PCA: pca, W: clone(c, w)}
	bestRecall, bestHits := -1.0, -1.0
	var reps []EpochReport
	order := make([]int, len(train))
	for i := range order {
		order[i] = i
	}
	if c.Paths > 0 { // the untrained heads are the text side's ranking: a candidate too
		rep := EpochReport{Epoch: 0, Best: true}
		start := time.Now()
		if rep.DevRecall, rep.DevHits1, err = DevMetrics(ctx, best, dev, o.Select); err != nil {
			return nil, nil, err
		}
		bestRecall, bestHits, rep.Elapsed = rep.DevRecall, rep.DevHits1, time.Since(start)
		reps = append(reps, rep)
		if progress != nil {
			progress(rep)
		}
	}
	for ep := 1; ep <= o.Epochs; ep++ {
		start := time.Now()
		tr.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		rep := EpochReport{Epoch: ep}
		for lo := 0; lo < len(order); lo += o.Batch {
			if err := ctx.Err(); err != nil {
				return nil, reps, err
			}
			var exs []Example
			for _, i := range order[lo:min(lo+o.Batch, len(order))] {
				exs = append(exs, train[i])
			}
			tr.step(exs, &rep)
		}
		n := float64(len(train))
		rep.Loss, rep.RL, rep.BPR, rep.Reward = rep.Loss/n, rep.RL/n, rep.BPR/n, rep.Reward/n
		cur := &Model{Config: c, PCA: pca, W: w}
		if rep.DevRecall, rep.DevHits1, err = DevMetrics(ctx, cur, dev, o.Select); err != nil {
			return nil, reps, err
		}
		if better(o.HitsFirst, rep.DevRecall, rep.DevHits1, bestRecall, bestHits) {
			bestRecall, bestHits, rep.Best = rep.DevRecall, rep.DevHits1, true
			best.W = clone(c, w)
		}
		rep.Elapsed = time.Since(start)
		reps = append(reps, rep)
		if progress != nil {
			progress(rep)
		}
	}
	return best, reps, nil
}

// better says whether an epoch's dev (recall, hits) beats the best so far.
func better(hitsFirst bool, recall, hits, bestRecall, bestHits float64) bool {
	if hitsFirst {
		return hits > bestHits || hits == bestHits && recall > bestRecall
	}
	return recall > bestRecall || recall == bestRecall && hits > bestHits
}

// DevMetrics are the mean Recall@k and Hits@1 of m's selections over exs,
// run in batches.
func DevMetrics(ctx context.Context, m *Model, exs []Example, k int) (recallK, hits1 float64, err error) {
	const batch = 32
	var sum, hits float64
	for lo := 0; lo < len(exs); lo += batch {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		var gs []*Graph
		for _, ex := range exs[lo:min(lo+batch, len(exs))] {
			gs = append(gs, ex.G)
		}
		outs, err := m.Forward(gs)
		if err != nil {
			return 0, 0, err
		}
		for i, out := range outs {
			rows := Select(out, gs[i].Eligible, k)
			sum += recall(rows, exs[lo+i].T)
			if len(rows) > 0 && slices.Contains(exs[lo+i].T.Gold, rows[0]) {
				hits++
			}
		}
	}
	n := float64(len(exs))
	return sum / n, hits / n, nil
}

func recall(rows []int, t Target) float64 {
	if t.NumGold == 0 {
		return 0
	}
	gold := map[int]bool{}
	for _, g := range t.Gold {
		gold[g] = true
	}
	hit := 0
	for _, r := range rows {
		if gold[r] {
			hit++
		}
	}
	return float64(hit) / float64(t.NumGold)
}

// trainer holds the optimiser state between steps.
type trainer struct {
	c     Config
	o     TrainOptions
	w     *Weights[float32]
	opt   *adamW
	rng   *rand.Rand
	done  int
	steps int
	// stepsPerEpoch averages the gradient norms
	stepsPerEpoch int
}

// addGradNorms adds each tensor's gradient norm times scale to rep.
func addGradNorms(c Config, g *Weights[float32], rep *EpochReport, scale float64) {
	if rep.GradNorm == nil {
		rep.GradNorm = map[string]float64{}
	}
	g.each(c, func(name string, _ []int, p *[]float32) {
		var s float64
		for _, x := range *p {
			s += float64(x) * float64(x)
		}
		rep.GradNorm[name] += math.Sqrt(s) * scale
	})
}

// step is one optimiser step on a minibatch: forward over its union,
// each graph's loss, backward, clip, AdamW.
func (tr *trainer) step(exs []Example, rep *EpochReport) {
	gs := make([]*Graph, len(exs))
	for i, ex := range exs {
		gs[i] = ex.G
	}
	b, _ := newBatch[float32](tr.c, gs) // validated in Train
	t := forward(tr.w, tr.c, b, tr.o.Dropout, tr.rng)
	dP, dS := make([]float32, b.n), make([]float32, b.n)
	inv := 1 / float64(len(exs))
	for gi, ex := range exs {
		lo, n := b.first[gi], ex.G.Nodes()
		p, s := widen(t.P[lo:lo+n]), widen(t.S[lo:lo+n])
		lp := graphLoss(p, s, eligibleRows(ex.G), ex.T, tr.o.Loss, tr.rng)
		for i := 0; i < n; i++ {
			dP[lo+i] = float32(lp.dP[i] * inv)
			dS[lo+i] = float32(lp.dS[i] * inv)
		}
		rep.Loss += lp.rl + lp.bpr
		rep.RL += lp.rl
		rep.BPR += lp.bpr
		rep.Reward += lp.reward
	}
	g := zeros[float32](tr.c)
	t.backward(tr.w, g, dP, dS)
	addGradNorms(tr.c, g, rep, 1/float64(tr.stepsPerEpoch))
	clipNorm(tr.c, g, tr.o.Clip)
	tr.done++
	tr.opt.update(tr.c, tr.w, g, tr.lr(tr.done), tr.o.WeightDecay)
}

// lr is the rate at step s (1-based): linear warm-up, then cosine to 0.
func (tr *trainer) lr(s int) float64 {
	warm := int(math.Ceil(tr.o.Warmup * float64(tr.steps)))
	if s <= warm {
		return tr.o.LR * float64(s) / float64(warm)
	}
	frac := float64(s-warm) / float64(max(tr.steps-warm, 1))
	return tr.o.LR * 0.5 * (1 + math.Cos(math.Pi*min(frac, 1)))
}

func widen(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// eligibleRows lists the rows the policy may pick.
func eligibleRows(g *Graph) []int {
	var rows []int
	for i := 0; i < g.Nodes(); i++ {
		if g.Eligible == nil || g.Eligible[i] {
			rows = append(rows, i)
		}
	}
	return rows
}

func clone(c Config, w *Weights[float32]) *Weights[float32] {
	out := zeros[float32](c)
	src := map[string][]float32{}
	w.each(c, func(name string, _ []int, p *[]float32) { src[name] = *p })
	out.each(c, func(name string, _ []int, p *[]float32) { copy(*p, src[name]) })
	return out
}

// clipNorm scales g so its global L2 norm is at most maxNorm.
func clipNorm(c Config, g *Weights[float32], maxNorm float64) {
	var ss float64
	g.each(c, func(_ string, _ []int, p *[]float32) {
		for _, v := range *p {
			ss += float64(v) * float64(v)
		}
	})
	if n := math.Sqrt(ss); n > maxNorm {
		f := float32(maxNorm / n)
		g.each(c, func(_ string, _ []int, p *[]float32) {
			for i := range *p {
				(*p)[i] *= f
			}
		})
	}
}

// adamW is Adam with decoupled weight decay (Loshchilov & Hutter), β =
// (0.9, 0.999), ε = 1e-8.
type adamW struct {
	m, v *Weights[float32]
	t    int
}

func newAdamW(c Config) *adamW {
	return &adamW{m: zeros[float32](c), v: zeros[float32](c)}
}

func (a *adamW) update(c Config, w, g *Weights[float32], lr, wd float64) {
	const b1, b2, eps = 0.9, 0.999, 1e-8
	a.t++
	c1, c2 := 1-math.Pow(b1, float64(a.t)), 1-math.Pow(b2, float64(a.t))
	var ms, vs, gs [][]float32
	a.m.each(c, func(_ string, _ []int, p *[]float32) { ms = append(ms, *p) })
	a.v.each(c, func(_ string, _ []int, p *[]float32) { vs = append(vs, *p) })
	g.each(c, func(_ string, _ []int, p *[]float32) { gs = append(gs, *p) })
	k := 0
	w.each(c, func(_ string, _ []int, p *[]float32) {
		m, v, gr := ms[k], vs[k], gs[k]
		for i, x := range *p {
			gi := float64(gr[i])
			mi := b1*float64(m[i]) + (1-b1)*gi
			vi := b2*float64(v[i]) + (1-b2)*gi*gi
			m[i], v[i] = float32(mi), float32(vi)
			x64 := float64(x) * (1 - lr*wd)
			(*p)[i] = float32(x64 - lr*(mi/c1)/(math.Sqrt(vi/c2)+eps))
		}
		k++
	})
}
