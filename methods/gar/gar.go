// Package gar is Graph-based Adaptive Re-ranking (docs/methods.md §1.6) in
// FastInsight's setting: method "gar".
package gar

import (
	"container/heap"
	"context"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// Options configure GAR.
type Options struct {
	Stage      retrieve.StageOptions   // the initial ranking's first stage
	Encoder    retrieve.EncoderOptions // the cross-encoder
	GraphKinds []string                // graph-kind: the edges walked (empty: all)
	Budget     int                     // bmax: c, documents scored, ≥ 1 (default 100)
	Batch      int                     // batch: b, documents per scoring batch, ≥ 1 (default 10)
	NoBackfill bool                    // no-backfill: do not append unscored initial documents
}

// DefaultOptions: c = 100 (FastInsight's b_max), b = 10, from BM25.
func DefaultOptions() Options {
	return Options{Stage: retrieve.DefaultStage(), Budget: 100, Batch: 10}
}

// Params binds every setting.
func (o *Options) Params(p *retrieve.Params) {
	o.Stage.Params(p)
	o.Encoder.Params(p)
	retrieve.GraphKinds(p, &o.GraphKinds)
	retrieve.BMax(p, &o.Budget, "GAR: documents scored (its budget c)")
	retrieve.Batch(p, &o.Batch, "GAR: documents per scoring batch (its b)")
	p.Bool(&o.NoBackfill, "no-backfill", "GAR: do not append the unscored initial documents below the scored ones")
}

// Validate checks every setting.
func (o Options) Validate() error { return retrieve.Validate(&o, (*Options).Params) }

func init() {
	retrieve.Must(retrieve.Register(retrieve.Def[Options]{Name: "gar", Summary: "GAR: adaptive reranking of the first stage and its graph frontier, streaming each batch",
		Defaults: DefaultOptions, Params: (*Options).Params, Reads: []string{"head"}, Filters: true,
		Tune: &retrieve.Tuning{Axes: []retrieve.TuneAxis{{Setting: "first-stage", Values: []string{"bm25", "hybrid"}}}},
		New:  func(ix *index.Index, env retrieve.Env, o Options) (retrieve.Method, error) { return New(ix, env, o) }}))
}

// gar is Graph-based Adaptive Re-ranking: it alternates scoring batches
// from the initial ranking (the first stage's top c) and from the graph
// frontier (unscored neighbours of scored documents, prioritised by their
// best-scoring neighbour), until c documents are scored; all explicit
// neighbours are used (§9 register, item 5). Equal priorities are taken in
// insertion order, as the reference's Counter.most_common does: the
// initial ranking's order, and the order neighbours joined the frontier (a
// raised priority keeps its place).
type gar struct {
	ix    *index.Index
	st    *retrieve.Stage
	o     Options
	adj   *graphops.Adjacency
	adjMu sync.Once
	*retrieve.Reranker
}

// New makes method "gar" with o.
func New(ix *index.Index, env retrieve.Env, o Options) (retrieve.StreamingMethod, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := retrieve.RequireGraph(ix, o.GraphKinds, "gar"); err != nil {
		return nil, err
	}
	st, err := retrieve.NewStage(ix, env.Backend, o.Stage)
	if err != nil {
		return nil, err
	}
	rr, err := retrieve.NewReranker(ix, env.Backend, o.Encoder)
	if err != nil {
		return nil, err
	}
	return &gar{ix: ix, st: st, o: o, Reranker: rr}, nil
}

func (m *gar) Name() string { return "gar" }

func (m *gar) Retrieve(ctx context.Context, q retrieve.Query, k int) ([]retrieve.Hit, error) {
	var last []retrieve.Hit
	err := m.RetrieveStream(ctx, q, k, func(h []retrieve.Hit) bool { last = h; return true })
	return last, err
}

// prio is a max-priority map of documents; equal priorities come out in
// insertion order.
type prio struct {
	items []prioItem
	pos   map[int32]int
	seq   int
}

type prioItem struct {
	retrieve.Hit
	seq int // insertion number: the tie-break
}

func newPrio() *prio { return &prio{pos: map[int32]int{}} }

func (p *prio) Len() int { return len(p.items) }
func (p *prio) Less(i, j int) bool {
	if p.items[i].Score != p.items[j].Score {
		return p.items[i].Score > p.items[j].Score
	}
	return p.items[i].seq < p.items[j].seq
}
func (p *prio) Swap(i, j int) {
	p.items[i], p.items[j] = p.items[j], p.items[i]
	p.pos[p.items[i].Index], p.pos[p.items[j].Index] = i, j
}
func (p *prio) Push(x any) {
	h := x.(prioItem)
	p.pos[h.Index] = len(p.items)
	p.items = append(p.items, h)
}
func (p *prio) Pop() any {
	h := p.items[len(p.items)-1]
	p.items = p.items[:len(p.items)-1]
	delete(p.pos, h.Index)
	return h
}

// set raises (or inserts) a document's priority and reports whether it
// changed anything.
func (p *prio) set(v int32, s float32) bool {
	if i, ok := p.pos[v]; ok {
		if s > p.items[i].Score {
			p.items[i].Score = s
			heap.Fix(p, i)
			return true
		}
		return false
	}
	p.seq++
	heap.Push(p, prioItem{retrieve.Hit{Index: v, Score: s}, p.seq})
	return true
}

func (p *prio) remove(v int32) {
	if i, ok := p.pos[v]; ok {
		heap.Remove(p, i)
	}
}

func (p *prio) top(n int) []int32 {
	var out []int32
	for p.Len() > 0 && len(out) < n {
		out = append(out, heap.Pop(p).(prioItem).Index)
	}
	return out
}

// RetrieveStream emits the ranking of scored documents after every batch.
func (m *gar) RetrieveStream(ctx context.Context, q retrieve.Query, k int, emit func([]retrieve.Hit) bool) error {
	q = retrieve.Visible(m.ix, q) // deleted nodes stay out

	if strings.TrimSpace(q.Text) == "" {
		return retrieve.ErrEmptyQuery
	}
	m.adjMu.Do(func() { m.adj = m.ix.View(m.o.GraphKinds...) })
	adj := retrieve.AllowedView(m.adj, q) // under a filter: the frontier never reaches another node
	svc, err := m.Service()
	if err != nil {
		return err
	}
	r0, err := m.st.Run(ctx, q, m.o.Budget)
	if err != nil || len(r0) == 0 {
		return err
	}
	sess, err := svc.SessionWithin(ctx, q.Text, false, retrieve.Subset(q))
	if err != nil {
		return err
	}
	return m.loop(ctx, sess, adj, r0, k, emit)
}

func (m *gar) loop(ctx context.Context, sess *models.Session, adj *graphops.Adjacency, r0 []retrieve.Hit, k int, emit func([]retrieve.Hit) bool) error {
	initial, frontier := newPrio(), newPrio()
	for _, h := range r0 {
		initial.set(h.Index, h.Score)
	}
	var scored []garScored // in scoring order
	done := map[int32]bool{}
	minscore := float32(math.Inf(1))
	for it := 0; len(scored) < m.o.Budget && (initial.Len() > 0 || frontier.Len() > 0); it++ {
		pick := [2]*prio{initial, frontier}[it%2]
		if pick.Len() == 0 {
			continue
		}
		batch := pick.top(min(m.o.Batch, m.o.Budget-len(scored)))
		scores, err := retrieve.ScoreNodes(ctx, sess, m.CE.Head, batch)
		if err != nil {
			return err
		}
		for i, v := range batch {
			done[v] = true
			initial.remove(v)
			frontier.remove(v)
			scored = append(scored, garScored{retrieve.Hit{Index: v, Score: scores[i]}, it})
		}
		if len(scored) < m.o.Budget {
			minscore = m.grow(adj, frontier, batch, scores, done, m.o.Budget-len(scored), minscore)
		}
		if !emit(m.ranking(scored, r0, done, k)) {
			return nil
		}
	}
	return nil
}

// garScored is a scored document and the iteration that scored it.
type garScored struct {
	retrieve.Hit
	iter int
}

// grow updates the frontier as the reference's _update_frontier does: the
// batch in descending (score, id) order; a document adds its unscored
// neighbours only while the frontier holds fewer than rem documents or its
// score reaches minscore, which falls to the lowest score that added one.
// It returns the new minscore.
func (m *gar) grow(adj *graphops.Adjacency, frontier *prio, batch []int32, scores []float32, done map[int32]bool, rem int, minscore float32) float32 {
	order := make([]int, len(batch))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		if sa, sb := scores[order[a]], scores[order[b]]; sa != sb {
			return sa > sb
		}
		return m.ix.NodeID(int(batch[order[a]])) > m.ix.NodeID(int(batch[order[b]]))
	})
	for _, i := range order {
		d, sd := batch[i], scores[i]
		if frontier.Len() >= rem && sd < minscore {
			continue
		}
		hit := false
		for p := adj.Ptr[d]; p < adj.Ptr[d+1]; p++ {
			if t := adj.Idx[p]; !done[t] {
				hit = frontier.set(t, sd) || hit
			}
		}
		if hit && sd < minscore {
			minscore = sd
		}
	}
	return minscore
}

// ranking sorts scored documents as the reference's Counter.most_common
// does on (score, iteration): score descending, then the later iteration,
// then scoring order; while fewer than the budget are scored, it backfills
// up to the rest of the budget with unscored initial documents in their
// order, each one below the last.
func (m *gar) ranking(scored []garScored, r0 []retrieve.Hit, done map[int32]bool, k int) []retrieve.Hit {
	byScore := append([]garScored(nil), scored...)
	sort.SliceStable(byScore, func(a, b int) bool {
		if byScore[a].Score != byScore[b].Score {
			return byScore[a].Score > byScore[b].Score
		}
		return byScore[a].iter > byScore[b].iter
	})
	out := make([]retrieve.Hit, len(byScore), len(byScore)+min(m.o.Budget, len(r0))) // backfill takes at most r0
	for i, s := range byScore {
		out[i] = s.Hit
	}
	if !m.o.NoBackfill && len(scored) < m.o.Budget {
		last := float32(0)
		if len(out) > 0 {
			last = out[len(out)-1].Score
		}
		room := m.o.Budget - len(scored)
		for _, h := range r0 {
			if room == 0 {
				break
			}
			if !done[h.Index] {
				last--
				room--
				out = append(out, retrieve.Hit{Index: h.Index, Score: last})
			}
		}
	}
	return out[:min(k, len(out))]
}
