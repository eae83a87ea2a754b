package seeder

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// Target is what one training graph is scored against: the rows that are
// gold answers and the number of gold answers in all (recall's
// denominator, including answers the candidate graph missed).
type Target struct {
	Gold    []int
	NumGold int
}

// LossOptions weigh SeedER's objective L = L_RL + BPRWeight·L_BPR
// (docs/methods.md §3.1 stage 4).
type LossOptions struct {
	Samples   int     // M subsets sampled per query (8)
	K         int     // subset size k (20)
	Temp      float64 // Plackett–Luce temperature τ_s (1)
	BPRWeight float64 // 1
	// Listwise replaces BPR's mean over every (gold, other) pair with a
	// softmax cross-entropy over the eligible rows, −log Σ_gold softmax(s)
	// (an extension, docs/methods.md §3.5): the pair mean is dominated by
	// easy negatives long before the best-scored row is gold.
	Listwise bool `json:"listwise,omitempty"`
}

// DefaultLossOptions are the paper's: M = 8 subsets of 20, τ = 1, BPR
// weight 1.
func DefaultLossOptions() LossOptions { return LossOptions{Samples: 8, K: 20, Temp: 1, BPRWeight: 1} }

// lossParts is one graph's loss and its gradients over its rows.
type lossParts struct {
	rl, bpr, reward float64
	dP, dS          []float64
}

// graphLoss scores one graph: rows are its candidates (row i is p[i],
// s[i]), eligible the rows the policy may pick. It samples o.Samples
// rankings by Gumbel-top-k (Plackett–Luce without replacement), rewards
// each by recall, and returns REINFORCE's surrogate with the mean reward
// as baseline plus BPR over (gold, non-gold) eligible pairs.
func graphLoss(p, s []float64, eligible []int, t Target, o LossOptions, rng *rand.Rand) lossParts {
	lp := lossParts{dP: make([]float64, len(p)), dS: make([]float64, len(s))}
	if len(eligible) == 0 || t.NumGold == 0 {
		return lp
	}
	gold := map[int]bool{}
	for _, g := range t.Gold {
		gold[g] = true
	}
	k := min(o.K, len(eligible))
	samples := make([][]int, o.Samples)
	rewards := make([]float64, o.Samples)
	for m := range samples {
		samples[m] = gumbelTopK(p, eligible, k, o.Temp, rng)
		hit := 0
		for _, r := range samples[m] {
			if gold[r] {
				hit++
			}
		}
		rewards[m] = float64(hit) / float64(t.NumGold)
		lp.reward += rewards[m] / float64(o.Samples)
	}
	for m, sm := range samples {
		adv := rewards[m] - lp.reward
		if adv == 0 {
			continue
		}
		logp := plLogProb(p, eligible, sm, o.Temp, lp.dP, -adv/float64(o.Samples))
		lp.rl -= adv * logp / float64(o.Samples)
	}
	if o.Listwise {
		lp.bpr = o.BPRWeight * listwise(s, eligible, gold, lp.dS, o.BPRWeight)
	} else {
		lp.bpr = o.BPRWeight * bpr(s, eligible, gold, lp.dS, o.BPRWeight)
	}
	return lp
}

// gumbelTopK draws a Plackett–Luce ranking of k eligible rows: the k
// largest p/τ + Gumbel noise, best first.
func gumbelTopK(p []float64, eligible []int, k int, temp float64, rng *rand.Rand) []int {
	type key struct {
		row int
		v   float64
	}
	keys := make([]key, len(eligible))
	for i, r := range eligible {
		u := rng.Float64()
		for u == 0 {
			u = rng.Float64()
		}
		keys[i] = key{r, p[r]/temp - math.Log(-math.Log(u))}
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Or(cmp.Compare(b.v, a.v), cmp.Compare(a.row, b.row)) })
	out := make([]int, k)
	for i := range out {
		out[i] = keys[i].row
	}
	return out
}

// plLogProb returns log P(ranking) under Plackett–Luce over the eligible
// rows with logits p/τ, and adds coef·∂logP/∂p to dP: at each step the
// pick gains coef/τ and every row still unpicked loses coef/τ times its
// softmax over the rows left. Each step renormalises over what is left
// (O(k·|eligible|)), as subtracting picked mass from the total would
// cancel catastrophically once the large logits are gone.
func plLogProb(p []float64, eligible, ranking []int, temp float64, dP []float64, coef float64) float64 {
	left := append([]int(nil), eligible...)
	var logp float64
	for _, pick := range ranking {
		mx := math.Inf(-1)
		for _, r := range left {
			mx = math.Max(mx, p[r]/temp)
		}
		var z float64
		for _, r := range left {
			z += math.Exp(p[r]/temp - mx)
		}
		logp += p[pick]/temp - mx - math.Log(z)
		dP[pick] += coef / temp
		at := -1
		for i, r := range left {
			dP[r] -= coef / temp * math.Exp(p[r]/temp-mx) / z
			if r == pick {
				at = i
			}
		}
		if at >= 0 {
			left[at] = left[len(left)-1]
			left = left[:len(left)-1]
		}
	}
	return logp
}

// bpr is the mean of −log σ(s_pos − s_neg) over eligible (gold, non-gold)
// pairs; it adds coef times its gradient to dS.
func bpr(s []float64, eligible []int, gold map[int]bool, dS []float64, coef float64) float64 {
	var pos, neg []int
	for _, r := range eligible {
		if gold[r] {
			pos = append(pos, r)
		} else {
			neg = append(neg, r)
		}
	}
	if len(pos) == 0 || len(neg) == 0 {
		return 0
	}
	inv := 1 / float64(len(pos)*len(neg))
	var loss float64
	for _, a := range pos {
		for _, b := range neg {
			x := s[a] - s[b]
			loss += softplus(-x) * inv
			g := -sigmoid(-x) * inv * coef // d(−log σ(x))/dx = −σ(−x)
			dS[a] += g
			dS[b] -= g
		}
	}
	return loss
}

// listwise is −log of the softmax mass on the gold rows among the
// eligible ones; it adds coef times its gradient to dS.
func listwise(s []float64, eligible []int, gold map[int]bool, dS []float64, coef float64) float64 {
	var all, pos []float64
	for _, r := range eligible {
		all = append(all, s[r])
		if gold[r] {
			pos = append(pos, s[r])
		}
	}
	if len(pos) == 0 {
		return 0
	}
	// each log-sum-exp shifted by its own maximum: gold rows far below the
	// best one must not underflow to a zero mass
	lseAll, lsePos := logSumExp(all), logSumExp(pos)
	for _, r := range eligible {
		g := math.Exp(s[r] - lseAll) // d/ds_r: p_r − [gold]·q_r, q the softmax over the gold rows
		if gold[r] {
			g -= math.Exp(s[r] - lsePos)
		}
		dS[r] += coef * g
	}
	return lseAll - lsePos
}

// logSumExp is log Σ eˣ, stable.
func logSumExp(x []float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, v)
	}
	var s float64
	for _, v := range x {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

// softplus is log(1 + eˣ), stable for large |x|.
func softplus(x float64) float64 {
	if x > 30 {
		return x
	}
	return math.Log1p(math.Exp(x))
}
