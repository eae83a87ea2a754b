// Package tune chooses a retrieval method and its main settings for an
// index on labelled questions, with k-fold cross-validation so the score
// it reports is not the one it chose on (docs/choosing.md). `gleaner
// tune` runs it and writes the choice as a retrieve.Profile.
package tune

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/eval"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/progress"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// Options configures Run. Start from DefaultOptions: a zero Folds or an
// empty Metric is an error.
type Options struct {
	// Methods are the candidates, in order (ties go to the earlier one);
	// nil means every method registered with a retrieve.Tuning.
	Methods []string
	// Metric is what is maximised: an eval metric at a cut-off, e.g.
	// "recall@5", "ndcg@10", "answer_recall@5".
	Metric string
	// Folds is k of the k-fold cross-validation, ≥ 2.
	Folds int
	// Seed shuffles the questions into folds.
	Seed uint64
	// GroupBy judges documents (retrieve.GroupDocument) or passages.
	GroupBy string
	// Base are settings every candidate runs with (a graph kind); an axis
	// of a setting given here is not tried.
	Base retrieve.Overrides
	// Env runs the methods.
	Env retrieve.Env
	// Concurrency is the questions in flight per evaluation, ≥ 1.
	Concurrency int
	// Logger receives a line per configuration; nil: none.
	Logger *slog.Logger
	// Progress counts configurations; nil: none.
	Progress progress.Reporter
}

// DefaultOptions maximise Recall@5 with 4 folds.
func DefaultOptions() Options {
	return Options{Metric: "recall@5", Folds: 4, Seed: 1, Concurrency: 1}
}

// Candidate is one method configuration: the values of its tuned axes.
type Candidate struct {
	Method   string
	Settings map[string]string
}

// String spells the candidate as its flags.
func (c Candidate) String() string {
	var b strings.Builder
	b.WriteString(c.Method)
	for _, k := range slices.Sorted(maps.Keys(c.Settings)) {
		fmt.Fprintf(&b, " --%s %s", k, c.Settings[k])
	}
	return b.String()
}

// Row is one configuration's result on every question.
type Row struct {
	Candidate
	Dev   float64 // the metric's mean over the questions
	P50MS float64 // median latency per question
	score []float64
}

// MethodResult is a method's best configuration.
type MethodResult struct {
	Method string
	Best   Candidate // chosen on every question
	Dev    float64   // Best's mean (optimistic: chosen on these questions)
	CV     float64   // the k-fold estimate of choosing within this method
	P50MS  float64   // Best's median latency
	Tried  int
}

// Skip is a candidate method that cannot run on the index, and why.
type Skip struct {
	Method, Reason string
}

// Result is a tuning run.
type Result struct {
	Metric  string
	N       int // questions scored
	Folds   int
	Rows    []Row
	Methods []MethodResult // best CV first
	Skipped []Skip
	Chosen  Candidate // the best configuration on every question
	CV      float64   // k-fold estimate of the whole procedure (choose among all, score held out)
	Dev     float64   // Chosen's mean on every question
}

// Run evaluates every candidate configuration on qs and chooses.
func Run(ctx context.Context, ix *index.Index, qs []corpus.Query, o Options) (*Result, error) {
	if err := o.validate(len(qs)); err != nil {
		return nil, err
	}
	if _, k, _ := parseMetric(o.Metric); k >= ix.N() {
		return nil, fmt.Errorf("tune: %s over an index of %d nodes: every method would find everything; use a smaller cut-off", o.Metric, ix.N())
	}
	cands, err := candidates(o)
	if err != nil {
		return nil, err
	}
	res := &Result{Metric: o.Metric, Folds: o.Folds}
	o.Progress.Stage("tune", len(cands))
	defer o.Progress.Finish()
	var ids []string // the questions scored, fixed by the first configuration
	failed := map[string]bool{}
	for i, c := range cands {
		if failed[c.Method] {
			continue
		}
		row, why, err := evaluate(ctx, ix, qs, c, &o, &ids)
		switch {
		case err != nil:
			return nil, err
		case why != "":
			failed[c.Method] = true
			res.Skipped = append(res.Skipped, Skip{c.Method, why})
		default:
			res.Rows = append(res.Rows, *row)
			o.Logger.Info("tune: configuration scored", "config", c.String(), o.Metric, round4(row.Dev), "p50_ms", round4(row.P50MS))
		}
		o.Progress.Set(i + 1)
	}
	if len(res.Rows) == 0 {
		var why []string
		for _, s := range res.Skipped {
			why = append(why, s.Reason)
		}
		return nil, fmt.Errorf("tune: no candidate method can run on this index:\n  %s", strings.Join(why, "\n  "))
	}
	res.N = len(ids)
	if res.N < o.Folds {
		return nil, fmt.Errorf("tune: %d questions have judgements, fewer than %d folds: write more questions (20 or more), or lower --folds", res.N, o.Folds)
	}
	res.choose(folds(res.N, o.Folds, o.Seed))
	return res, nil
}

func (o *Options) validate(nq int) error {
	switch {
	case o.Folds < 2:
		return fmt.Errorf("tune: folds must be ≥ 2, got %d", o.Folds)
	case nq < o.Folds:
		return fmt.Errorf("tune: %d questions, fewer than %d folds: write more questions (20 or more), or lower --folds", nq, o.Folds)
	case o.Concurrency < 1:
		return fmt.Errorf("tune: concurrency must be ≥ 1, got %d", o.Concurrency)
	}
	if _, _, err := parseMetric(o.Metric); err != nil {
		return err
	}
	if err := retrieve.CheckGroupBy(o.GroupBy); err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Progress == nil {
		o.Progress = progress.Nop{}
	}
	return nil
}

// Metrics are the eval metrics tune can maximise (higher is better).
var Metrics = []string{eval.Recall, eval.RecallCap, eval.NDCG, eval.Hit, eval.MRR, eval.AnswerRecall}

// CheckMetric reports whether tune can maximise m.
func CheckMetric(m string) error {
	_, _, err := parseMetric(m)
	return err
}

// maxCutoff bounds a metric's cut-off.
const maxCutoff = 1000

// parseMetric splits "recall@5" into its name and cut-off.
func parseMetric(m string) (string, int, error) {
	name, k, ok := strings.Cut(m, "@")
	n, err := strconv.Atoi(k)
	if !ok || err != nil || n < 1 || n > maxCutoff {
		return "", 0, fmt.Errorf("tune: metric %q: want a name and a cut-off from 1 to %d, e.g. recall@5", m, maxCutoff)
	}
	if !slices.Contains(Metrics, name) {
		return "", 0, fmt.Errorf("tune: metric %q: want one of %s (at a cut-off)", m, strings.Join(Metrics, ", "))
	}
	return name, n, nil
}

// candidates lists every configuration of the candidate methods: the
// product of each method's axes, defaults first.
func candidates(o Options) ([]Candidate, error) {
	infos := map[string]retrieve.Info{}
	var names []string
	for _, in := range retrieve.Methods() {
		infos[in.Name] = in
		if in.Tune != nil {
			names = append(names, in.Name)
		}
	}
	if o.Methods != nil {
		names = o.Methods
	}
	var out []Candidate
	for _, name := range names {
		in, ok := infos[name]
		if !ok {
			return nil, fmt.Errorf("tune: unknown method %q", name)
		}
		out = append(out, product(name, tunedAxes(in, o.Base))...)
	}
	return out, nil
}

// tunedAxes are a method's axes less those Base fixes.
func tunedAxes(in retrieve.Info, base retrieve.Overrides) []retrieve.TuneAxis {
	if in.Tune == nil {
		return nil
	}
	var out []retrieve.TuneAxis
	for _, a := range in.Tune.Axes {
		if _, fixed := base.Get(a.Setting); !fixed {
			out = append(out, a)
		}
	}
	return out
}

// product enumerates the axes' combinations, the first axis slowest.
func product(method string, axes []retrieve.TuneAxis) []Candidate {
	out := []Candidate{{Method: method, Settings: map[string]string{}}}
	for _, a := range axes {
		var next []Candidate
		for _, c := range out {
			for _, v := range a.Values {
				s := maps.Clone(c.Settings)
				s[a.Setting] = v
				next = append(next, Candidate{Method: method, Settings: s})
			}
		}
		out = next
	}
	return out
}

// evaluate runs one configuration on every question. why is set when the
// method cannot run on this index (a section or graph it lacks).
func evaluate(ctx context.Context, ix *index.Index, qs []corpus.Query, c Candidate, o *Options, ids *[]string) (*Row, string, error) {
	cfg, err := config(c, o.Base)
	if err != nil {
		return nil, "", err
	}
	m, err := retrieve.New(ix, o.Env, cfg)
	if err != nil {
		var missing *index.MissingError
		if errors.As(err, &missing) || errors.Is(err, index.ErrNotBuilt) || errors.Is(err, retrieve.ErrNoGraph) {
			return nil, err.Error(), nil
		}
		return nil, "", fmt.Errorf("tune: %s: %w", c, err)
	}
	defer retrieve.CloseAll(context.Background(), m)
	_, k, _ := parseMetric(o.Metric)
	rep, err := eval.Evaluate(ctx, ix, qs, []retrieve.Method{m}, eval.Options{K: k, Cutoffs: []int{k},
		Concurrency: o.Concurrency, GroupBy: o.GroupBy, Logger: o.Logger})
	if err != nil {
		return nil, "", fmt.Errorf("tune: %s: %w", c, err)
	}
	mr := rep.Methods[0]
	if _, ok := mr.Metrics[o.Metric]; !ok && len(mr.PerQuery) > 0 {
		return nil, "", fmt.Errorf("tune: metric %q is not computed for these questions (have %v)", o.Metric, slices.Sorted(maps.Keys(mr.Metrics)))
	}
	if *ids == nil {
		*ids = scoredIDs(qs, mr.PerQuery)
		if len(*ids) == 0 {
			return nil, "", fmt.Errorf("tune: no question has gold ids or answers to score %s by", o.Metric)
		}
	}
	row := &Row{Candidate: c, P50MS: mr.Latency.Median, score: make([]float64, len(*ids))}
	for i, id := range *ids {
		row.score[i] = mr.PerQuery[id][o.Metric] // a question this configuration could not score counts 0
		row.Dev += row.score[i]
	}
	row.Dev /= float64(len(*ids))
	return row, "", nil
}

// config is a candidate's method configuration: defaults, Base, then the
// candidate's values.
func config(c Candidate, base retrieve.Overrides) (*retrieve.Config, error) {
	cfg, err := retrieve.NewConfig(c.Method)
	if err != nil {
		return nil, err
	}
	if err := base.Apply(cfg); err != nil {
		return nil, fmt.Errorf("tune: %s: %w", c.Method, err)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Settings)) {
		if err := cfg.Set(k, c.Settings[k]); err != nil {
			return nil, fmt.Errorf("tune: %s: %w", c, err)
		}
	}
	return cfg, cfg.Validate()
}

// scoredIDs are the questions eval scored, in file order.
func scoredIDs(qs []corpus.Query, per map[string]map[string]float64) []string {
	var out []string
	for _, q := range qs {
		if _, ok := per[q.ID]; ok {
			out = append(out, q.ID)
		}
	}
	return out
}

// folds assigns each of n questions to one of k folds: a seeded shuffle,
// dealt round-robin, so fold sizes differ by at most one.
func folds(n, k int, seed uint64) []int {
	perm := rand.New(rand.NewPCG(seed, 0x7475_6e65)).Perm(n)
	f := make([]int, n)
	for pos, q := range perm {
		f[q] = pos % k
	}
	return f
}

// choose fills the per-method results, the chosen configuration and the
// k-fold estimates.
func (r *Result) choose(fold []int) {
	all := make([]int, len(r.Rows))
	byMethod := map[string][]int{}
	var order []string
	for i, row := range r.Rows {
		all[i] = i
		if _, ok := byMethod[row.Method]; !ok {
			order = append(order, row.Method)
		}
		byMethod[row.Method] = append(byMethod[row.Method], i)
	}
	r.CV = crossValidate(r.Rows, all, fold, r.Folds)
	cv := map[string]float64{}
	for _, m := range order {
		rows := byMethod[m]
		b := bestOn(r.Rows, rows, fold, -1)
		cv[m] = crossValidate(r.Rows, rows, fold, r.Folds)
		r.Methods = append(r.Methods, MethodResult{Method: m, Best: r.Rows[b].Candidate, Dev: r.Rows[b].Dev,
			CV: cv[m], P50MS: r.Rows[b].P50MS, Tried: len(rows)})
	}
	// The best dev score wins; among equal ones, the method whose choice
	// held up best on held-out folds (higher cv), then the first listed.
	best := bestOn(r.Rows, all, fold, -1)
	for _, i := range all {
		if r.Rows[i].Dev == r.Rows[best].Dev && cv[r.Rows[i].Method] > cv[r.Rows[best].Method] {
			best = i
		}
	}
	r.Chosen, r.Dev = r.Rows[best].Candidate, r.Rows[best].Dev
	slices.SortStableFunc(r.Methods, func(a, b MethodResult) int {
		switch {
		case a.CV > b.CV:
			return -1
		case a.CV < b.CV:
			return 1
		}
		return 0
	})
}

// bestOn is the row of rows with the highest mean over the questions not
// in fold out (−1: every question); the first wins a tie.
func bestOn(rows []Row, among []int, fold []int, out int) int {
	best, bestMean := among[0], -1.0
	for _, i := range among {
		sum, n := 0.0, 0
		for q, s := range rows[i].score {
			if fold[q] != out {
				sum += s
				n++
			}
		}
		if mean := sum / float64(max(n, 1)); mean > bestMean {
			best, bestMean = i, mean
		}
	}
	return best
}

// crossValidate is the mean, over every question, of the score of the
// configuration chosen without that question's fold.
func crossValidate(rows []Row, among []int, fold []int, k int) float64 {
	sum := 0.0
	for f := range k {
		b := bestOn(rows, among, fold, f)
		for q, s := range rows[b].score {
			if fold[q] == f {
				sum += s
			}
		}
	}
	return sum / float64(len(fold))
}

func round4(x float64) float64 { return float64(int64(x*10000+0.5)) / 10000 }

// Profile is the chosen configuration as a profile, with rec's provenance.
func (r *Result) Profile(groupBy string, rec retrieve.TuneRecord, base retrieve.Overrides) *retrieve.Profile {
	s := maps.Clone(r.Chosen.Settings)
	cfg, err := retrieve.NewConfig(r.Chosen.Method)
	for _, n := range base.Names() { // the settings it was tuned under go with it
		if v, _ := base.Get(n); err == nil && cfg.Param(n) != nil {
			s[n] = v
		}
	}
	rec.N, rec.Metric, rec.Folds, rec.CV, rec.Dev = r.N, r.Metric, r.Folds, r.CV, r.Dev
	return &retrieve.Profile{Method: r.Chosen.Method, Settings: s, GroupBy: groupBy, Tuned: &rec}
}
