package seeder

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// PathExample is one training question for the text side: its features,
// the seeds its answer mass starts from, and its gold nodes.
type PathExample struct {
	Feats []int32
	Seeds []int32
	Gold  []int32
}

// PathTrainOptions configure TrainPaths.
type PathTrainOptions struct {
	Epochs  int
	Batch   int
	LR      float64 // Adam's step, constant
	Workers int     // questions read at once (≥ 1)
	Seed    uint64
}

// DefaultPathTrainOptions: 10 epochs of 32 questions at 3e-3, 2 workers.
func DefaultPathTrainOptions() PathTrainOptions {
	return PathTrainOptions{Epochs: 10, Batch: 32, LR: 3e-3, Workers: 2, Seed: 1}
}

// Validate checks the options.
func (o PathTrainOptions) Validate() error {
	if o.Epochs < 1 || o.Epochs > MaxEpochs || o.Batch < 1 || o.Batch > 4096 || !(o.LR > 0 && o.LR <= 1) || o.Workers < 1 || o.Workers > 256 {
		return fmt.Errorf("seeder: path training needs 1..%d epochs, a batch of 1..4096, a learning rate in (0, 1] and 1..256 workers, got %d, %d, %g, %d",
			MaxEpochs, o.Epochs, o.Batch, o.LR, o.Workers)
	}
	return nil
}

// PathEpoch is one epoch of the text side's training.
type PathEpoch struct {
	Epoch    int     `json:"epoch"`
	Loss     float64 `json:"loss"`      // mean squared error of the answer mass, per question
	DevHits1 float64 `json:"dev_hits1"` // the spread's best node is gold
	Best     bool    `json:"best,omitempty"`
}

// TrainPaths trains the text side: each question's reading spreads its
// seeds' mass over g, and the squared error between the mass and the gold
// nodes (TransferNet's answer loss, Shi et al. 2021) is minimised by Adam.
// The epoch with the best dev Hits@1 is kept (ties: the earliest).
func TrainPaths(ctx context.Context, c PathConfig, names [][]int32, g *PathGraph, train, dev []PathExample, o PathTrainOptions, progress func(PathEpoch)) (*PathScorer, []PathEpoch, error) {
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	s, err := newPathScorer(c, names)
	if err != nil {
		return nil, nil, err
	}
	if err := g.Validate(2 * c.Relations); err != nil {
		return nil, nil, err
	}
	for _, ex := range slices.Concat(train, dev) {
		if err := checkExample(c, g, ex); err != nil {
			return nil, nil, err
		}
	}
	if len(train) == 0 || len(dev) == 0 {
		return nil, nil, fmt.Errorf("seeder: the text side needs training and dev questions with a linked node and a gold node, got %d and %d", len(train), len(dev))
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x9a7f))
	adam := &pathAdam{}
	best, bestHits := clonePath(c, s.W), -1.0
	var reps []PathEpoch
	order := make([]int, len(train))
	for i := range order {
		order[i] = i
	}
	for ep := 1; ep <= o.Epochs; ep++ {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		var loss float64
		for b := 0; b < len(order); b += o.Batch {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			var batch []PathExample
			for _, i := range order[b:min(b+o.Batch, len(order))] {
				batch = append(batch, train[i])
			}
			grad, l := s.batchGrad(g, batch, o.Workers)
			loss += l
			adam.update(c, s.W, grad, o.LR)
		}
		rep := PathEpoch{Epoch: ep, Loss: loss / float64(len(train)), DevHits1: s.hits1(g, dev, o.Workers)}
		if rep.DevHits1 > bestHits {
			bestHits, best = rep.DevHits1, clonePath(c, s.W)
		}
		reps = append(reps, rep)
		if progress != nil {
			progress(rep)
		}
	}
	for i := range reps {
		reps[i].Best = reps[i].DevHits1 == bestHits && !slices.ContainsFunc(reps[:i], func(r PathEpoch) bool { return r.Best })
	}
	s.W = best
	return s, reps, nil
}

func checkExample(c PathConfig, g *PathGraph, ex PathExample) error {
	for _, f := range ex.Feats {
		if f < 0 || int(f) >= c.Features {
			return fmt.Errorf("seeder: question feature %d outside %d", f, c.Features)
		}
	}
	for _, v := range slices.Concat(ex.Seeds, ex.Gold) {
		if v < 0 || int(v) >= g.N() {
			return fmt.Errorf("seeder: question node %d outside the path graph's %d", v, g.N())
		}
	}
	return nil
}

// hits1 is the share of questions whose node of largest mass (ties to the
// lower id) is gold.
func (s *PathScorer) hits1(g *PathGraph, exs []PathExample, workers int) float64 {
	if len(exs) == 0 {
		return 0
	}
	hit := make([]bool, len(exs))
	z, nm := s.relationVectors()
	parallelFor(len(exs), workers, func(i int) {
		ex := exs[i]
		sp := s.forward(ex.Feats, z, nm).out.Spread(g, ex.Seeds, nil)
		if v, ok := sp.Best(); ok {
			hit[i] = slices.Contains(ex.Gold, v)
		}
	})
	n := 0
	for _, h := range hit {
		if h {
			n++
		}
	}
	return float64(n) / float64(len(exs))
}

// Best is the reached node of largest mass (ties to the lower id).
func (s *Spread) Best() (int32, bool) {
	if len(s.Nodes) == 0 {
		return 0, false
	}
	return slices.MaxFunc(s.Nodes, func(a, b int32) int { return cmp.Or(cmp.Compare(s.Y[a], s.Y[b]), cmp.Compare(b, a)) }), true
}

// parallelFor runs fn(0..n-1) on workers goroutines.
func parallelFor(n, workers int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(workers, max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// batchGrad is the batch's summed loss gradient and loss. Questions are
// read and spread in parallel; their gradients are added in batch order,
// so training is reproducible whatever the workers' timing.
func (s *PathScorer) batchGrad(g *PathGraph, batch []PathExample, workers int) (*pathWeights[float64], float64) {
	c, d := s.Config, s.Config.Dim
	z, nm := s.relationVectors()
	type result struct {
		t    *pathTape
		dP   [][]float64
		dA   []float64
		loss float64
	}
	res := make([]result, len(batch))
	parallelFor(len(batch), workers, func(i int) {
		ex := batch[i]
		t := s.forward(ex.Feats, z, nm)
		sp := t.out.spread(g, ex.Seeds, nil, 0)
		dY, l := answerLoss(sp, ex.Gold, g.N())
		dP, dA := sp.back(g, &t.out, dY)
		res[i] = result{t, dP, dA, l}
	})
	grad := zeroPath[float64](c)
	dz := make([]float64, len(z))
	var loss float64
	for _, r := range res {
		loss += r.loss
		s.readBack(r.t, r.dP, r.dA, grad, dz)
	}
	s.relationBack(nm, dz, grad, d)
	return grad, loss
}

// answerLoss is Σ_v (y_v − gold_v)² over every node (an unreached gold
// node costs 1 and has no gradient) and its gradient in y (dense).
func answerLoss(sp *Spread, gold []int32, n int) ([]float64, float64) {
	dY := make([]float64, n)
	isGold := map[int32]bool{}
	for _, v := range gold {
		isGold[v] = true
	}
	var l float64
	for _, v := range sp.Nodes {
		diff := sp.Y[v]
		if isGold[v] {
			diff--
		}
		l += diff * diff
		dY[v] = 2 * diff
	}
	for v := range isGold {
		if sp.Y[v] == 0 { // unreached: a constant
			l++
		}
	}
	return dY, l
}

// readBack adds one question's gradient through the reading to grad, and
// to dz (the relation vectors, shared by the batch).
func (s *PathScorer) readBack(t *pathTape, dP [][]float64, dA []float64, grad *pathWeights[float64], dz []float64) {
	c, w, d := s.Config, s.W, s.Config.Dim
	da := make([]float64, d)
	for h := 0; h < c.Hops; h++ {
		dl := softmaxBack(t.out.P[h], dP[h])
		dq := make([]float64, d)
		for r, g := range dl {
			if g == 0 {
				continue
			}
			zr, dzr := t.z[r*d:(r+1)*d], dz[r*d:(r+1)*d]
			for j := range dq {
				dq[j] += g * zr[j]
				dzr[j] += g * t.q[h][j]
			}
		}
		linBack(t.a, w.HopW[h*d*d:(h+1)*d*d], dq, grad.HopW[h*d*d:(h+1)*d*d], grad.HopB[h*d:(h+1)*d], da)
	}
	linBack(t.a, w.AlphaW, softmaxBack(t.out.Alpha, dA), grad.AlphaW, grad.AlphaB, da)
	for j, x := range t.a {
		if x <= 0 {
			da[j] = 0
		}
	}
	du := make([]float64, d)
	linBack(t.u, w.W0, da, grad.W0, grad.B0, du)
	if len(t.feats) > 0 {
		inv := 1 / float64(len(t.feats))
		for _, f := range t.feats {
			for j := range du {
				grad.Emb[int(f)*d+j] += du[j] * inv
			}
		}
	}
}

// relationBack adds the gradient of the relation vectors z_r̃ to grad.
func (s *PathScorer) relationBack(nm, dz []float64, grad *pathWeights[float64], d int) {
	w := s.W
	for r, fs := range s.Names {
		dn := make([]float64, d)
		for dir := 0; dir < 2; dir++ {
			row := 2*r + dir
			dzr := dz[row*d : (row+1)*d]
			for j, g := range dzr {
				grad.RelEmb[row*d+j] += g
			}
			linBack(nm[r*d:(r+1)*d], w.Dir[dir*d*d:(dir+1)*d*d], dzr, grad.Dir[dir*d*d:(dir+1)*d*d], nil, dn)
		}
		if len(fs) > 0 {
			inv := 1 / float64(len(fs))
			for _, f := range fs {
				for j := range dn {
					grad.Emb[int(f)*d+j] += dn[j] * inv
				}
			}
		}
	}
}

// linBack is y = x·W + b's backward: dW += xᵀdy, db += dy, dx += W·dy.
func linBack(x []float64, w []float32, dy []float64, dw, db, dx []float64) {
	m := len(dy)
	for i, xi := range x {
		row, grow := w[i*m:(i+1)*m], dw[i*m:(i+1)*m]
		var s float64
		for j, g := range dy {
			grow[j] += xi * g
			s += float64(row[j]) * g
		}
		dx[i] += s
	}
	if db != nil {
		for j, g := range dy {
			db[j] += g
		}
	}
}

// softmaxBack is the logits' gradient from the probabilities' gradient.
func softmaxBack(p, dp []float64) []float64 {
	var s float64
	for i := range p {
		s += p[i] * dp[i]
	}
	out := make([]float64, len(p))
	for i := range p {
		out[i] = p[i] * (dp[i] - s)
	}
	return out
}

func zeroPath[F Float](c PathConfig) *pathWeights[F] {
	w := &pathWeights[F]{}
	w.each(c, func(_ string, shape []int, p *[]F) { *p = make([]F, numel(shape)) })
	return w
}

func clonePath(c PathConfig, w *pathWeights[float32]) *pathWeights[float32] {
	out := &pathWeights[float32]{}
	var src [][]float32
	w.each(c, func(_ string, _ []int, p *[]float32) { src = append(src, *p) })
	k := 0
	out.each(c, func(_ string, _ []int, p *[]float32) { *p = slices.Clone(src[k]); k++ })
	return out
}

// pathAdam is Adam over the text side's tensors (moments in float64).
type pathAdam struct {
	m, v *pathWeights[float64]
	t    int
}

func (a *pathAdam) update(c PathConfig, w *pathWeights[float32], g *pathWeights[float64], lr float64) {
	const b1, b2, eps = 0.9, 0.999, 1e-8
	if a.m == nil {
		a.m, a.v = zeroPath[float64](c), zeroPath[float64](c)
	}
	a.t++
	c1, c2 := 1-math.Pow(b1, float64(a.t)), 1-math.Pow(b2, float64(a.t))
	var ms, vs, gs [][]float64
	a.m.each(c, func(_ string, _ []int, p *[]float64) { ms = append(ms, *p) })
	a.v.each(c, func(_ string, _ []int, p *[]float64) { vs = append(vs, *p) })
	g.each(c, func(_ string, _ []int, p *[]float64) { gs = append(gs, *p) })
	k := 0
	w.each(c, func(_ string, _ []int, p *[]float32) {
		m, v, gr := ms[k], vs[k], gs[k]
		for i := range *p {
			m[i] = b1*m[i] + (1-b1)*gr[i]
			v[i] = b2*v[i] + (1-b2)*gr[i]*gr[i]
			(*p)[i] -= float32(lr * (m[i] / c1) / (math.Sqrt(v[i]/c2) + eps))
		}
		k++
	})
}
