package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/progress"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// Options configures Evaluate.
type Options struct {
	K           int                  // primary cut-off (table columns); default 10
	Cutoffs     []int                // extra cut-offs in the report; default 1,2,5,10,20,100
	Concurrency int                  // queries in flight; default 1; capped at the number of queries and MaxConcurrency
	TRMaxHops   int                  // bound for Topological Recall paths; 0 = unbounded
	GraphKinds  []string             // edges Topological Recall walks (default: all kinds)
	Vectors     map[string][]float32 // query vectors by query id (precomputed indexes)
	RunDir      string               // where TREC runs are written; "" = none
	// ContextBudgets, when set, also scores each method's LLM context at
	// these sizes in cl100k_base tokens (retrieve.BuildContext: ketrag's
	// own context, other methods' top nodes): context_answer_recall@B and
	// context_tokens@B. Rankings are then computed to ContextDepth at
	// least, so a method's top nodes can fill the largest budget.
	ContextBudgets []int
	// GroupBy is retrieve.GroupPassage ("" too) or retrieve.GroupDocument:
	// rank documents by their best passage and judge document ids.
	GroupBy string
	Logger  *slog.Logger
	// Progress shows queries done per method (nil: none); long
	// evaluations with transformer models take minutes.
	Progress progress.Reporter

	trOnce *sync.Once
	trAdj  *graphops.Adjacency
}

func (o *Options) normalize() error {
	if o.K == 0 {
		o.K = 10
	}
	if o.K < 0 {
		return fmt.Errorf("eval: k must be positive, got %d", o.K)
	}
	if o.Cutoffs == nil {
		o.Cutoffs = []int{1, 2, 5, 10, 20, 100}
	}
	o.Cutoffs = append(slices.Clone(o.Cutoffs), o.K)
	slices.Sort(o.Cutoffs)
	o.Cutoffs = slices.Compact(o.Cutoffs)
	if o.Cutoffs[0] <= 0 {
		return fmt.Errorf("eval: cut-offs must be positive, got %v", o.Cutoffs)
	}
	if o.Concurrency < 0 {
		return fmt.Errorf("eval: concurrency must be ≥ 1, got %d", o.Concurrency)
	}
	o.Concurrency = max(o.Concurrency, 1)
	for _, b := range o.ContextBudgets {
		if b < 1 || b > retrieve.MaxContextBudget {
			return fmt.Errorf("eval: context budgets must be in [1, %d] tokens, got %v", retrieve.MaxContextBudget, o.ContextBudgets)
		}
	}
	if err := retrieve.CheckGroupBy(o.GroupBy); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if o.trOnce == nil {
		o.trOnce = &sync.Once{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Progress == nil {
		o.Progress = progress.Nop{}
	}
	return nil
}

// MaxConcurrency caps the queries in flight: one goroutine each, and more
// than this only queue on the engine's scheduler.
const MaxConcurrency = 1024

// Evaluate runs every query through each method and scores the rankings.
func Evaluate(ctx context.Context, ix *index.Index, qs []corpus.Query, methods []retrieve.Method, o Options) (*Report, error) {
	if err := o.normalize(); err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, errors.New("eval: no queries")
	}
	if err := CheckJudgements(ix, qs, o.GroupBy); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	rep, _ := NewReport(ix, o)
	rep.describe(qs)
	for _, m := range methods {
		mr, err := evalMethod(ctx, ix, qs, m, rep, &o)
		if err != nil {
			return nil, fmt.Errorf("eval: method %s: %w", m.Name(), err)
		}
		rep.Methods = append(rep.Methods, *mr)
	}
	return rep, nil
}

type outcome struct {
	run []Entry
	ms  float64
	ctx map[string]float64 // context metrics (ContextBudgets)
}

func evalMethod(ctx context.Context, ix *index.Index, qs []corpus.Query, m retrieve.Method, rep *Report, o *Options) (*MethodReport, error) {
	start, pairs0 := time.Now(), encodedPairs(m)
	outs, err := runQueries(ctx, ix, qs, m, rep.Depth, o)
	if err != nil {
		return nil, err
	}
	wall := time.Since(start).Seconds()
	mr := &MethodReport{Method: m.Name(), Metrics: map[string]float64{}, PerQuery: map[string]map[string]float64{}}
	run := Run{}
	lat := make([]float64, len(qs))
	for i, q := range qs {
		run[q.ID] = outs[i].run
		lat[i] = outs[i].ms
		scores, ok := scoreQuery(ix, q, outs[i].run, rep, o)
		if len(outs[i].ctx) > 0 {
			if !ok {
				scores = map[string]float64{}
			}
			maps.Copy(scores, outs[i].ctx)
			ok = true
		}
		mr.add(q.ID, scores, ok)
	}
	mr.average()
	mr.Latency = Summarize(lat)
	mr.QPS = float64(len(qs)) / wall
	mr.EncoderPairs = float64(encodedPairs(m)-pairs0) / float64(len(qs))
	if o.RunDir != "" {
		mr.RunFile = filepath.Join(o.RunDir, m.Name()+".trec")
		if err := writeRunFile(mr.RunFile, run, m.Name()); err != nil {
			return nil, err
		}
	}
	o.Logger.Info("method evaluated", "method", m.Name(), "queries", mr.Evaluated, "median_ms", math.Round(mr.Latency.Median*1000)/1000)
	return mr, nil
}

func scoreQuery(ix *index.Index, q corpus.Query, run []Entry, rep *Report, o *Options) (map[string]float64, bool) {
	docs := make([]string, len(run))
	for i, e := range run {
		docs[i] = e.Doc
	}
	scores, ok := Score(docs, Judgements(q.Judgements()), o.Cutoffs)
	if len(q.Answers) > 0 {
		if !ok {
			scores = map[string]float64{}
		}
		maps.Copy(scores, ScoreAnswers(nodeTexts(ix, run, o.Cutoffs[len(o.Cutoffs)-1]), q.Answers, o.Cutoffs))
		ok = true
	}
	if !ok || !rep.Topological || len(q.Judgements()) == 0 {
		return scores, ok
	}
	var seeds, gold []int32
	for _, e := range run[:min(o.K, len(run))] {
		if v, ok := e.nodeIn(ix); ok {
			seeds = append(seeds, v)
		}
	}
	for d, g := range q.Judgements() {
		if v, ok := ix.Lookup(d); ok && g > 0 {
			gold = append(gold, v)
		}
	}
	slices.Sort(gold) // map order would change the float sum's last bits from run to run
	t := TopologicalRecall(o.trGraph(ix), ix.N(), seeds, gold, o.TRMaxHops)
	scores[Name(TR, o.K)], scores[Name(MissTR, o.K)] = t.TR, t.MissTR
	return scores, true
}

// nodeTexts is the title and text of the first n retrieved nodes, what an
// answer must be found in.
func nodeTexts(ix *index.Index, run []Entry, n int) []string {
	var out []string
	for _, e := range run[:min(n, len(run))] {
		if v, ok := e.nodeIn(ix); ok {
			out = append(out, ix.Title(int(v))+"\n"+ix.Text(int(v)))
		}
	}
	return out
}

// CheckJudgements refuses gold ids the index does not hold, and gold ids
// of the wrong unit: documents when passages are ranked, or passages when
// documents are (every such query would score 0). Evaluate calls it.
func CheckJudgements(ix *index.Index, qs []corpus.Query, groupBy string) error {
	for _, q := range qs {
		for _, id := range slices.Sorted(maps.Keys(q.Judgements())) {
			if err := checkJudged(ix, q.ID, id, groupBy); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkJudged(ix *index.Index, qid, id, groupBy string) error {
	v, isNode := ix.Lookup(id)
	isDoc := ix.IsDocument(id)
	switch {
	case groupBy == retrieve.GroupDocument && !isDoc && isNode:
		return fmt.Errorf("query %q: gold id %q is a passage of document %q, and documents are ranked (--group-by document): judge the document", qid, id, ix.Document(int(v)))
	case groupBy != retrieve.GroupDocument && !isNode && isDoc:
		return fmt.Errorf("query %q judges document %q, and the ranking is of passages: evaluate with --group-by document", qid, id)
	case !isNode && !isDoc:
		return fmt.Errorf("query %q: gold id %q is not in the index %s%s", qid, id, ix.Dir, idHint(ix, id))
	}
	return nil
}

// idHint suggests the id an imported file has when id is its raw path.
func idHint(ix *index.Index, id string) string {
	for _, cand := range []string{corpus.PathID(id), corpus.PathID(id) + "#1"} {
		if cand == id {
			continue
		}
		if _, ok := ix.Lookup(cand); ok || ix.IsDocument(cand) {
			return fmt.Sprintf(" (did you mean %q? ids of imported files percent-encode spaces, '#' and '%%')", cand)
		}
	}
	return ""
}

// runQueries retrieves every query with o.Concurrency workers, timing each.
func runQueries(ctx context.Context, ix *index.Index, qs []corpus.Query, m retrieve.Method, depth int, o *Options) ([]outcome, error) {
	outs := make([]outcome, len(qs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o.Progress.Stage(m.Name(), len(qs))
	defer o.Progress.Finish()
	var done atomic.Int64
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		next  = make(chan int)
	)
	for w := 0; w < min(o.Concurrency, len(qs), MaxConcurrency); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := runOne(ctx, ix, qs[i], m, depth, o, &outs[i]); err != nil {
					once.Do(func() { first = err; cancel() })
				}
				o.Progress.Set(int(done.Add(1)))
			}
		}()
	}
feed:
	for i := range qs {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return outs, first
}

func runOne(ctx context.Context, ix *index.Index, q corpus.Query, m retrieve.Method, depth int, o *Options, out *outcome) error {
	rq := retrieve.Query{ID: q.ID, Text: q.Text, Vector: o.Vectors[q.ID]}
	start := time.Now()
	var hits []retrieve.Hit
	var err error
	if o.GroupBy == retrieve.GroupDocument {
		hits, err = retrieve.RetrieveDocuments(ctx, m, ix, rq, depth)
	} else {
		hits, err = m.Retrieve(ctx, rq, depth)
	}
	out.ms = float64(time.Since(start).Nanoseconds()) / 1e6
	if err != nil {
		return fmt.Errorf("query %q: %w", q.ID, err)
	}
	out.run = make([]Entry, len(hits))
	for i, h := range hits {
		out.run[i] = Entry{Doc: ix.NodeID(int(h.Index)), Score: float64(h.Score), node: h.Index, hasNode: true}
		if o.GroupBy == retrieve.GroupDocument {
			out.run[i].Doc = ix.Document(int(h.Index))
		}
	}
	if len(o.ContextBudgets) > 0 && len(q.Answers) > 0 {
		var err error
		if out.ctx, err = scoreContexts(ctx, ix, q, rq, m, hits, o.ContextBudgets); err != nil {
			return fmt.Errorf("query %q: context: %w", q.ID, err)
		}
	}
	return nil
}

// ContextDepth is how deep rankings go when contexts are scored: 1,000
// nodes fill any budget a context window holds.
const ContextDepth = 1000

// scoreContexts builds the method's context at every budget and scores
// whether it holds a gold answer.
func scoreContexts(ctx context.Context, ix *index.Index, q corpus.Query, rq retrieve.Query, m retrieve.Method, hits []retrieve.Hit, budgets []int) (map[string]float64, error) {
	out := map[string]float64{}
	nodes := make([]int32, len(hits))
	for i, h := range hits {
		nodes[i] = h.Index
	}
	for _, b := range budgets {
		var c *retrieve.LLMContext
		var err error
		if cb, ok := m.(retrieve.ContextBuilder); ok {
			c, err = cb.BuildContext(ctx, rq, b)
		} else {
			c, err = retrieve.FillContext(ix, nodes, b) // the ranking already computed, to depth
		}
		if err != nil {
			return nil, err
		}
		out[Name(ContextAnswerRecall, b)] = ScoreAnswers([]string{c.Text}, q.Answers, []int{1})[Name(AnswerRecall, 1)]
		out[Name(ContextTokens, b)] = float64(c.Tokens)
	}
	return out, nil
}

func writeRunFile(path string, run Run, tag string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return corpus.WriteFileAtomic(path, func(w io.Writer) error { return WriteTREC(w, run, tag) })
}

// EvaluateRun scores an existing run (e.g. a TREC file from another system)
// as if it were a method called name.
func EvaluateRun(ix *index.Index, qs []corpus.Query, run Run, name string, rep *Report, o Options) (*MethodReport, error) {
	if err := o.normalize(); err != nil {
		return nil, err
	}
	mr := &MethodReport{Method: name, Metrics: map[string]float64{}, PerQuery: map[string]map[string]float64{}}
	rep.describe(qs)
	for _, q := range qs {
		scores, ok := scoreQuery(ix, q, run[q.ID], rep, &o)
		mr.add(q.ID, scores, ok)
	}
	mr.average()
	return mr, nil
}

// describe records which kinds of gold the queries carry.
func (r *Report) describe(qs []corpus.Query) {
	for _, q := range qs {
		r.Gold = r.Gold || len(q.Judgements()) > 0
		r.Answers = r.Answers || len(q.Answers) > 0
	}
}

// NewReport starts an empty report for runs evaluated with EvaluateRun.
func NewReport(ix *index.Index, o Options) (*Report, error) {
	if err := o.normalize(); err != nil {
		return nil, err
	}
	depth := o.Cutoffs[len(o.Cutoffs)-1]
	if len(o.ContextBudgets) > 0 {
		depth = max(depth, ContextDepth)
	}
	return &Report{Created: time.Now().UTC().Format(time.RFC3339), Index: ix.Dir, K: o.K, Cutoffs: o.Cutoffs,
		Depth: depth, Concurrency: o.Concurrency, GroupBy: o.GroupBy, Topological: ix.Meta.Edges > 0 && o.GroupBy != retrieve.GroupDocument, ContextBudgets: o.ContextBudgets}, nil
}

// add records one query's scores (ok false: skipped, no relevant node).
func (mr *MethodReport) add(qid string, scores map[string]float64, ok bool) {
	if !ok {
		mr.Skipped++
		return
	}
	mr.Evaluated++
	mr.PerQuery[qid] = scores
	for name, v := range scores {
		mr.Metrics[name] += v
	}
}

// average turns the metric sums into means over the evaluated queries.
func (mr *MethodReport) average() {
	for name := range mr.Metrics {
		mr.Metrics[name] /= float64(max(mr.Evaluated, 1))
	}
}

// trGraph is the graph Topological Recall walks: the index's simple
// undirected view over o.GraphKinds (all kinds when empty), the same view
// the methods use, so degrees agree with theirs.
func (o *Options) trGraph(ix *index.Index) Graph {
	o.trOnce.Do(func() { o.trAdj = ix.View(o.GraphKinds...) })
	return o.trAdj
}

// encodedPairs is a reranking method's encoder pairs so far (0 for others).
func encodedPairs(m retrieve.Method) int {
	if pc, ok := m.(retrieve.PairCounter); ok {
		return pc.EncodedPairs()
	}
	return 0
}
