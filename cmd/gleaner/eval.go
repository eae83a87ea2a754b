package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/eval"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/progress"
	"github.com/gleaner-rag/gleaner/internal/safefile"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/tune"
)

type evalFlags struct {
	index, queries, methods, report, runs, queryVectors, cutoffs string
	columns, contextBudgets                                      string
	biEncoder, pooling, groupBy, profile                         string
	runFiles                                                     []string
	k, concurrency, trMaxHops, limit, skip                       int
	sf                                                           *settingFlags
	plot                                                         string
	tiesByRank                                                   bool
}

func newEval(g *globals) *cobra.Command {
	f := &evalFlags{}
	cmd := &cobra.Command{
		Use: "eval --index <dir> [--method bm25,vector] [--queries q.jsonl] [--k 10] [--report r.json]",
		Example: `  gleaner eval --index idx/scifact --method bm25,vector --report out/scifact.json
  gleaner eval --index idx/2wiki --graph-kind mentions --method bm25,ppr,fastinsight --columns recall@2,recall@5,recall@10,ndcg@10
  gleaner eval --index idx/2wiki --graph-kind mentions --method fastinsight --limit 200        # a dev slice
  gleaner eval --index idx/2wiki --graph-kind mentions --method fastinsight --skip 200         # the rest
  gleaner eval --index idx/scifact --run-file other-system.trec`,
		Short: "Evaluate retrieval methods (and TREC run files) on queries with gold ids or gold answers",
		Long: `Run every query through each --method and print one row per method.

Metrics at cut-off k (--k; the table's columns, or pick them with --columns):
  recall_cap@k   relevant nodes found in the top k / min(k, number relevant) (BEIR's capped recall)
  recall@k       relevant nodes found in the top k / number relevant
  ndcg@k         graded nDCG (grades as gains, log2 discount)
  hit@k, mrr@k   a relevant node in the top k; reciprocal rank of the first one
  tr@k, misstr@k Topological Recall (FastInsight) and its part from missed nodes (indexes with edges)
  answer_recall@k  questions whose gold answer occurs in a top-k node's title or text (answer-only sets)
  context_answer_recall@B  questions whose gold answer occurs in the method's LLM context of at most B
                 cl100k_base tokens (--context-budget B: ketrag's assembled context; other methods'
                 top nodes, ranked to depth 1,000, quoted in rank order while they fit);
                 context_tokens@B its mean size
  p50/p95 ms     per-query latency; q/s the throughput at --concurrency

Queries come from --queries, by default the queries.jsonl of the corpus the index was built from.
--limit N evaluates the first N (after --skip N): declare a dev slice for choices (--limit 200) and
report the rest (--skip 200). --concurrency N keeps N queries in flight through the shared engine
scheduler (capped at the number of queries and 1024). Each method's ranking is computed to the largest
cut-off (--cutoffs and --k; 100 by default) and written as a TREC run beside --report (--runs).
--run-file scores an existing TREC run (no latency: its time columns show "-").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := runEval(cmd, g, f)
			if err != nil {
				return err
			}
			return rep.WriteColumns(cmd.OutOrStdout(), splitList(f.columns))
		},
		PostRunE: func(cmd *cobra.Command, _ []string) error {
			if f.plot == "" {
				return nil
			}
			names := retrieve.Readers("bmax")
			if cmd.Flags().Changed("method") {
				listed, _ := methodList(f.methods) // validated by RunE
				names = slices.DeleteFunc(listed, func(n string) bool { return !slices.Contains(names, n) })
			}
			if len(names) == 0 {
				return fmt.Errorf("--plot sweeps bmax, and none of --method %s has that setting (%s do)", f.methods, strings.Join(retrieve.Readers("bmax"), ", "))
			}
			return runSweep(cmd, g, f, names)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.index, "index", "", "index folder")
	fl.StringVar(&f.queries, "queries", "", "queries.jsonl with gold ids (default: <index source>/queries.jsonl)")
	fl.StringVar(&f.methods, "method", "bm25,vector", "comma-separated methods: auto (what query and serve run without one), "+strings.Join(retrieve.Names(), ", "))
	fl.IntVarP(&f.k, "k", "k", 10, "cut-off shown in the table")
	fl.StringVar(&f.cutoffs, "cutoffs", "1,2,5,10,20,100", "cut-offs computed for the report")
	fl.StringVar(&f.report, "report", "", "write the JSON report here")
	fl.StringVar(&f.columns, "columns", "", "metric columns of the table, e.g. recall@2,recall@5,recall@10,ndcg@10 (default: every metric at --k); each cut-off must be in --cutoffs or be --k")
	fl.StringVar(&f.runs, "runs", "", "write TREC runs here (default: beside the report)")
	fl.StringArrayVar(&f.runFiles, "run-file", nil, "also evaluate this TREC run file (repeatable)")
	fl.StringVar(&f.queryVectors, "query-vectors", "", "query vectors (.npy in queries order or .jsonl {id, vector}) for precomputed indexes")
	fl.BoolVar(&f.tiesByRank, "run-file-by-rank", false, "order --run-file entries by their rank column, not trec_eval's (score desc, doc id desc)")
	fl.IntVar(&f.concurrency, "concurrency", 1, "queries in flight at once (≥ 1; capped at the number of queries and 1024)")
	fl.IntVar(&f.trMaxHops, "tr-max-hops", 0, "bound on Topological Recall path length (0 = none)")
	fl.StringVar(&f.biEncoder, "bi-encoder", "", "the bi-encoder folder the index's vectors came from (embeds the queries)")
	fl.StringVar(&f.pooling, "pooling", "mean", "bi-encoder pooling: mean or cls")
	f.sf = addSettingFlags(fl, retrieve.Methods(), "--method")
	fl.StringVar(&f.plot, "plot", "", "after the table, sweep bmax = 10…100 for the --method methods that have that setting (default: every such method) and write the plots (Pareto R@10 vs time, TR vs b_max) to <prefix>-pareto.{png,svg} and <prefix>-tr.{png,svg}")
	fl.StringVar(&f.contextBudgets, "context-budget", "", "also score each method's LLM context at these sizes in cl100k_base tokens (comma-separated, e.g. 12000,2000): ketrag's own context, other methods' top nodes; context_answer_recall@B and context_tokens@B")
	fl.StringVar(&f.profile, "profile", "", "a profile from gleaner tune: its method (unless --method), settings and grouping (flags given win)")
	fl.StringVar(&f.groupBy, "group-by", retrieve.GroupPassage, "passage, or document: rank documents by their best passage and judge document ids (questions whose gold names files)")
	fl.IntVar(&f.limit, "limit", 0, "evaluate only the first N queries (0 = all; after --skip)")
	fl.IntVar(&f.skip, "skip", 0, "leave out the first N queries (e.g. a dev slice used for choices: --limit 200 is the dev slice, --skip 200 the rest)")
	return cmd
}

func runEval(cmd *cobra.Command, g *globals, f *evalFlags) (*eval.Report, error) {
	if f.index == "" {
		return nil, fmt.Errorf("--index is required")
	}
	f.sf.log = g.log
	if err := f.sf.useProfile(f.profile, f.index, &f.methods, &f.groupBy, "method"); err != nil {
		return nil, err
	}
	if p := f.sf.profile; p != nil && p.Tuned != nil && !cmd.Flags().Changed("k") { // report at the cut-off it was tuned for
		if _, k, ok := strings.Cut(p.Tuned.Metric, "@"); ok {
			if n, err := strconv.Atoi(k); err == nil && tune.CheckMetric(p.Tuned.Metric) == nil {
				f.k = n // a record a hand edited into nonsense is ignored, not trusted
			}
		}
	}
	names, err := methodList(f.methods)
	if err != nil {
		return nil, err
	}
	if err := checkReportPath(f.report); err != nil {
		return nil, err
	}
	switch {
	case f.k < 1:
		return nil, fmt.Errorf("--k must be ≥ 1, got %d", f.k)
	case f.concurrency < 1:
		return nil, fmt.Errorf("--concurrency must be ≥ 1, got %d (it is capped at the number of queries and %d)", f.concurrency, eval.MaxConcurrency)
	case f.trMaxHops < 0:
		return nil, fmt.Errorf("--tr-max-hops must be ≥ 0, got %d", f.trMaxHops)
	}
	if err := retrieve.CheckGroupBy(f.groupBy); err != nil {
		return nil, fmt.Errorf("--group-by: %w", err)
	}
	auto := slices.Contains(names, retrieve.Auto)
	if auto && f.profile != "" {
		return nil, fmt.Errorf("--method auto and --profile name two defaults; give one")
	}
	early := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == retrieve.Auto })
	if auto {
		early = append(early, retrieve.AutoMethods...)
	}
	if _, err := f.sf.configs(retrieve.NewConfig, early); err != nil { // every method flag before the index is read
		return nil, err
	}
	ix, err := openIndex(g, f.index, f.biEncoder, f.pooling)
	if err != nil {
		return nil, err
	}
	defer ix.Close()
	if auto { // what query and serve run without a method, under its own name
		f.sf.profile = retrieve.DefaultProfile(ix)
		names = slices.Compact(slices.Replace(names, slices.Index(names, retrieve.Auto), slices.Index(names, retrieve.Auto)+1, f.sf.profile.Method))
		if dup := slices.Index(names, f.sf.profile.Method); dup >= 0 && slices.Index(names[dup+1:], f.sf.profile.Method) >= 0 {
			return nil, fmt.Errorf("--method: auto is %s on this index, which is listed too", f.sf.profile.Method)
		}
	}
	cfgs, err := f.sf.configs(retrieve.NewConfig, names)
	if err != nil {
		return nil, err
	}
	defaulted := f.queries == ""
	if defaulted {
		f.queries = filepath.Join(ix.Meta.Source, corpus.QueriesFile)
	}
	qs, err := corpus.ReadQueries(f.queries, nil, corpus.ReadOptions{Logger: g.log})
	if errors.Is(err, os.ErrNotExist) && defaulted {
		return nil, fmt.Errorf("%w: the index was built from %s, which has no %s now; give the queries with --queries", err, ix.Meta.Source, corpus.QueriesFile)
	}
	if err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("%s holds no queries", f.queries)
	}
	if qs, err = sliceQueries(qs, f.skip, f.limit); err != nil {
		return nil, err
	}
	opt, err := evalOptions(f, ix, qs, g)
	if err != nil {
		return nil, err
	}
	if err := checkColumns(f.columns, opt); err != nil {
		return nil, err
	}
	var ms []retrieve.Method
	defer func() { retrieve.CloseAll(context.Background(), ms...) }()
	for _, cfg := range cfgs {
		m, err := newMethod(g, ix, cfg)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	rep, err := eval.Evaluate(cmd.Context(), ix, qs, ms, opt)
	if err != nil {
		return nil, err
	}
	rep.Queries = f.queries
	if err := addRunFiles(ix, qs, rep, f.runFiles, f.tiesByRank, opt); err != nil {
		return nil, err
	}
	if f.report != "" {
		if err := rep.WriteJSON(f.report); err != nil {
			return nil, err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "report: %s\n", f.report)
	}
	return rep, nil
}

func evalOptions(f *evalFlags, ix *index.Index, qs []corpus.Query, g *globals) (eval.Options, error) {
	opt := eval.Options{K: f.k, Concurrency: f.concurrency, TRMaxHops: f.trMaxHops, Logger: g.log, RunDir: f.runs, GraphKinds: graphKinds(f.sf), GroupBy: f.groupBy,
		Progress: progress.New(os.Stderr, g.log, 5*time.Second)}
	for _, c := range splitList(f.cutoffs) {
		var k int
		if _, err := fmt.Sscan(c, &k); err != nil || k <= 0 {
			return opt, fmt.Errorf("--cutoffs: %q is not a positive integer", c)
		}
		opt.Cutoffs = append(opt.Cutoffs, k)
	}
	var budgets []string
	if f.contextBudgets != "" {
		var err error
		if budgets, err = strictList("--context-budget", f.contextBudgets); err != nil {
			return opt, err
		}
	}
	for _, c := range budgets {
		var b int
		if _, err := fmt.Sscan(c, &b); err != nil || b <= 0 || b > retrieve.MaxContextBudget || fmt.Sprint(b) != c {
			return opt, fmt.Errorf("--context-budget: %q is not a token count in [1, %d]", c, retrieve.MaxContextBudget)
		}
		opt.ContextBudgets = append(opt.ContextBudgets, b)
	}
	if opt.RunDir == "" && f.report != "" {
		opt.RunDir = strings.TrimSuffix(f.report, filepath.Ext(f.report)) + ".runs"
	}
	if err := eval.CheckJudgements(ix, qs, f.groupBy); err != nil {
		return opt, fmt.Errorf("%s: %w", f.queries, err)
	}
	if f.queryVectors != "" {
		ids := make([]string, len(qs))
		for i, q := range qs {
			ids[i] = q.ID
		}
		v, d, err := models.ReadVectors(f.queryVectors, ids)
		if err != nil {
			return opt, err
		}
		opt.Vectors = map[string][]float32{}
		for i, id := range ids {
			opt.Vectors[id] = v[i*d : (i+1)*d]
		}
	}
	return opt, nil
}

func addRunFiles(ix *index.Index, qs []corpus.Query, rep *eval.Report, files []string, byRank bool, opt eval.Options) error {
	for _, path := range files {
		run, err := eval.ReadTREC(path, byRank)
		if err != nil {
			return err
		}
		mr, err := eval.EvaluateRun(ix, qs, run, "run:"+filepath.Base(path), rep, opt)
		if err != nil {
			return err
		}
		rep.Methods = append(rep.Methods, *mr)
	}
	return nil
}

// runSweep runs the b_max sweep for --plot on the same index and queries.
func runSweep(cmd *cobra.Command, g *globals, f *evalFlags, names []string) error {
	ix, err := openIndex(g, f.index, f.biEncoder, f.pooling)
	if err != nil {
		return err
	}
	defer ix.Close()
	qs, err := corpus.ReadQueries(f.queries, nil, corpus.ReadOptions{Logger: g.log})
	if err != nil {
		return err
	}
	if qs, err = sliceQueries(qs, f.skip, f.limit); err != nil {
		return err
	}
	opt, err := evalOptions(f, ix, qs, g)
	if err != nil {
		return err
	}
	return sweep(cmd.Context(), cmd.OutOrStdout(), g, f, names, ix, qs, opt)
}

// sliceQueries leaves out the first skip queries and keeps at most limit
// (0: all) of the rest.
func sliceQueries(qs []corpus.Query, skip, limit int) ([]corpus.Query, error) {
	if skip < 0 || limit < 0 {
		return nil, fmt.Errorf("--skip and --limit must not be negative, got %d and %d", skip, limit)
	}
	if skip >= len(qs) {
		return nil, fmt.Errorf("--skip %d leaves none of the %d queries", skip, len(qs))
	}
	qs = qs[skip:]
	if limit > 0 && limit < len(qs) {
		qs = qs[:limit]
	}
	return qs, nil
}

// checkColumns validates --columns before any query runs.
func checkColumns(list string, opt eval.Options) error {
	known := []string{eval.RecallCap, eval.Recall, eval.NDCG, eval.Hit, eval.MRR, eval.AnswerRecall, eval.TR, eval.MissTR, eval.ContextAnswerRecall, eval.ContextTokens}
	for _, c := range splitList(list) {
		name, at, ok := strings.Cut(c, "@")
		var k int
		if _, err := fmt.Sscan(at, &k); !ok || err != nil || !slices.Contains(known, name) {
			return fmt.Errorf("--columns: %q is not metric@k (metrics: %s)", c, strings.Join(known, ", "))
		}
		switch {
		case name == eval.ContextAnswerRecall || name == eval.ContextTokens:
			if !slices.Contains(opt.ContextBudgets, k) {
				return fmt.Errorf("--columns: %q: budget %d is not in --context-budget", c, k)
			}
		case (name == eval.TR || name == eval.MissTR) && k != opt.K:
			return fmt.Errorf("--columns: %s is computed at --k %d only", name, opt.K)
		case k != opt.K && !slices.Contains(opt.Cutoffs, k):
			return fmt.Errorf("--columns: %q: cut-off %d is not in --cutoffs %v or --k", c, k, opt.Cutoffs)
		}
	}
	return nil
}

// methodList parses --method: at least one name, no empty entry, no name
// twice.
func methodList(list string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			return nil, fmt.Errorf("--method %q: an empty method name", list)
		case slices.Contains(out, n):
			return nil, fmt.Errorf("--method %q: %s is listed twice", list, n)
		}
		out = append(out, n)
	}
	return out, nil
}

// checkReportPath refuses, before any query runs, a --report that would
// replace a folder or a file that is not a gleaner report.
func checkReportPath(path string) error {
	if path == "" {
		return nil
	}
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--report %s: %w", path, err)
	}
	if st.IsDir() {
		return fmt.Errorf("--report %s is a folder; give a file name such as %s", path, filepath.Join(path, "report.json"))
	}
	b, err := safefile.Read(path, safefile.MaxTokenizer)
	var r struct {
		Methods []json.RawMessage `json:"methods"`
		Cutoffs []int             `json:"cutoffs"`
	}
	if err != nil || json.Unmarshal(b, &r) != nil || r.Cutoffs == nil {
		return fmt.Errorf("--report %s exists and is not a gleaner report; refusing to replace it", path)
	}
	return nil
}

// graphKinds are the edge kinds --graph-kind names (Topological Recall's
// graph; none: every kind).
func graphKinds(sf *settingFlags) []string {
	text, _ := sf.overrides().Get("graph-kind")
	return splitList(text)
}

// strictList splits a comma-separated flag value: at least one item, no
// empty item, no item twice.
func strictList(flag, list string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
			return nil, fmt.Errorf("%s %q: an empty item", flag, list)
		case slices.Contains(out, s):
			return nil, fmt.Errorf("%s %q: %s is listed twice", flag, list, s)
		}
		out = append(out, s)
	}
	return out, nil
}
