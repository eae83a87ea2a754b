package graphops

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"sort"
)

// PropagationOptions configure the query-time entity propagation of
// NexusRAG and LinearRAG (docs/methods.md §2.4). Every field is used as
// given.
type PropagationOptions struct {
	// MaxIter is maxT: rounds run while the round number, starting at 1,
	// is below it, so MaxIter 3 gives 2 rounds (the reference's loop).
	MaxIter int
	// Threshold is δ: an entity below it does not spread, a product below
	// it is dropped, and NexusRAG floors other activations to it.
	Threshold float64
	// Sentences is η: an active entity spreads through its top η unused
	// sentences by similarity to the question.
	Sentences int
	// Neighbours selects NexusRAG: activations through a sentence are
	// clamped by the neighbour weight (non-neighbours get δ) and every
	// round ends with one hop over W. false is LinearRAG: the product
	// itself, no W hop.
	Neighbours bool
}

// Validate reports a setting propagation cannot run with.
func (o PropagationOptions) Validate() error {
	if o.MaxIter < 1 || o.Sentences < 1 || !(o.Threshold >= 0) || math.IsInf(o.Threshold, 0) {
		return fmt.Errorf("graphops: propagation needs max iterations ≥ 1, sentences ≥ 1 and a finite threshold ≥ 0; got %d, %d, %v", o.MaxIter, o.Sentences, o.Threshold)
	}
	return nil
}

// Seed is a linked question entity with its linking score.
type Seed struct {
	Entity int32
	Score  float64
}

// Activation is an entity's last recorded activation: its score and the
// tier (round + 1; seeds are tier 1) at which it was written.
type Activation struct {
	Entity int32
	Score  float64
	Tier   int
}

// Propagation is the result: Weights (ew) accumulates every activation of
// every entity; Active holds each activated entity's last write, in order
// of first activation.
type Propagation struct {
	Weights []float64
	Active  []Activation
	Rounds  int
}

// frontier is an insertion-ordered map entity → activation (Python's dict
// semantics: rewriting a key keeps its place).
type frontier struct {
	acts []Activation
	pos  map[int32]int
}

func newFrontier() *frontier { return &frontier{pos: map[int32]int{}} }

func (f *frontier) set(a Activation) {
	if i, ok := f.pos[a.Entity]; ok {
		f.acts[i] = a
		return
	}
	f.pos[a.Entity] = len(f.acts)
	f.acts = append(f.acts, a)
}

func (f *frontier) has(e int32) bool { _, ok := f.pos[e]; return ok }

func (f *frontier) clone() *frontier {
	c := &frontier{acts: append([]Activation(nil), f.acts...), pos: make(map[int32]int, len(f.pos))}
	for k, v := range f.pos {
		c.pos[k] = v
	}
	return c
}

// Propagate spreads the seeds' scores through sentences (and, for
// NexusRAG, over W) with the BFS semantics of the reference: sim(s) is
// sentence s's cosine with the question, asked only for the sentences of
// activated entities (so a caller can compute them lazily; the reference
// scores every sentence). Cancellation is checked every round.
func (t *TriGraph) Propagate(ctx context.Context, seeds []Seed, sim func(sentence int32) float32, o PropagationOptions) (*Propagation, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	ew := make([]float64, len(t.Entities))
	active := newFrontier()
	for _, s := range seeds {
		if s.Entity < 0 || int(s.Entity) >= len(t.Entities) {
			return nil, fmt.Errorf("graphops: seed entity %d of %d", s.Entity, len(t.Entities))
		}
		ew[s.Entity] = s.Score
		active.set(Activation{s.Entity, s.Score, 1})
	}
	cur := active.clone()
	used := map[int32]bool{}
	w := &wReader{t: t}
	it := 1
	for ; len(cur.acts) > 0 && it < o.MaxIter; it++ {
		if err := cmp.Or(ctx.Err(), w.err); err != nil {
			return nil, err
		}
		next := t.sentenceRound(cur, used, sim, ew, it, o, w)
		if o.Neighbours {
			next = t.neighbourHop(next, ew, o.Threshold, w)
		}
		for _, a := range next.acts {
			active.set(a)
		}
		cur = next
	}
	if w.err != nil {
		return nil, w.err
	}
	return &Propagation{Weights: ew, Active: active.acts, Rounds: it - 1}, nil
}

// sentenceRound is path 1: each frontier entity at or above δ spreads
// through its top η unused sentences to every entity they mention
// (itself included).
func (t *TriGraph) sentenceRound(cur *frontier, used map[int32]bool, sim func(int32) float32, ew []float64, it int, o PropagationOptions, wr *wReader) *frontier {
	next := newFrontier()
	delta := o.Threshold
	for _, a := range cur.acts {
		if a.Score < delta {
			continue
		}
		for _, s := range t.topSentences(a.Entity, used, sim, o.Sentences) {
			used[s] = true
			base := a.Score * float64(sim(s))
			for _, e := range t.SentEnts.Neighbors(int(s)) {
				if base < delta {
					continue
				}
				v := base
				if o.Neighbours {
					v = delta // non-neighbour floor
					if w, ok := neighbourWeight(wr, a.Entity, e); ok {
						v = max(min(base, w), delta)
					}
				}
				ew[e] += v
				next.set(Activation{e, v, it + 1})
			}
		}
	}
	return next
}

// neighbourHop is path 2: one hop over W from the sentence round's
// frontier; an entity already in the frontier keeps its activation.
func (t *TriGraph) neighbourHop(front *frontier, ew []float64, delta float64, wr *wReader) *frontier {
	next := front.clone()
	for _, a := range front.acts {
		idx, w := wr.row(a.Entity)
		for q, j := range idx {
			v := a.Score * float64(w[q])
			if v < delta || next.has(j) {
				continue
			}
			next.set(Activation{j, v, a.Tier})
			ew[j] += v
		}
	}
	return next
}

// neighbourWeight returns W[e][j] when j is a neighbour of e.
func neighbourWeight(wr *wReader, e, j int32) (float64, bool) {
	idx, w := wr.row(e)
	for q, x := range idx {
		if x == j {
			return float64(w[q]), true
		}
	}
	return 0, false
}

// topSentences returns e's η most question-similar sentences not yet used
// (ties: lower sentence id).
func (t *TriGraph) topSentences(e int32, used map[int32]bool, sim func(int32) float32, eta int) []int32 {
	var cs []int32
	var ss []float32
	for _, s := range t.EntSents.Neighbors(int(e)) {
		if !used[s] {
			cs, ss = append(cs, s), append(ss, sim(s))
		}
	}
	sort.Sort(bySim{cs, ss})
	return cs[:min(eta, len(cs))]
}

// bySim orders sentences by similarity, descending, ties by lower id.
type bySim struct {
	s   []int32
	sim []float32
}

func (b bySim) Len() int { return len(b.s) }
func (b bySim) Less(i, j int) bool {
	if b.sim[i] != b.sim[j] {
		return b.sim[i] > b.sim[j]
	}
	return b.s[i] < b.s[j]
}
func (b bySim) Swap(i, j int) {
	b.s[i], b.s[j] = b.s[j], b.s[i]
	b.sim[i], b.sim[j] = b.sim[j], b.sim[i]
}

// PassageBonus adds, to bonus[p], Σ over active entities e whose
// lowercased string occurs c > 0 times in passage p of
// score_e·ln(1+c)/max(tier_e, 1) (§2.5, from the precomputed Occur).
func (t *TriGraph) PassageBonus(active []Activation, bonus []float64) {
	for _, a := range active {
		div := float64(max(a.Tier, 1))
		for q := t.Occur.Ptr[a.Entity]; q < t.Occur.Ptr[a.Entity+1]; q++ {
			bonus[t.Occur.Idx[q]] += a.Score * math.Log1p(float64(t.Occur.W[q])) / div
		}
	}
}
