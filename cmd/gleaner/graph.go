package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/progress"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func newGraph(g *globals) *cobra.Command {
	cmd := groupCommand("graph", "Build corpus graphs into an index and describe them")
	cmd.AddCommand(newGraphBuild(g), newGraphStats(g))
	return cmd
}

// buildsOf lists the registered build steps of a group.
func buildsOf(group string) []retrieve.Info {
	var out []retrieve.Info
	for _, b := range retrieve.Builds() {
		if b.Group == group {
			out = append(out, b)
		}
	}
	return out
}

func names(infos []retrieve.Info) []string {
	var out []string
	for _, i := range infos {
		out = append(out, i.Name)
	}
	return out
}

func newGraphBuild(g *globals) *cobra.Command {
	var dir, kind, biEncoder, pooling string
	var sf *settingFlags
	builds := buildsOf(retrieve.BuildGraph)
	kinds := strings.Join(names(builds), "|")
	long := "Build a graph or a method's graph structure over the index's nodes and store it in the index.\n"
	for _, b := range builds {
		long += fmt.Sprintf("\n  %s\n      %s\n", b.Name, strings.ReplaceAll(b.Long, "\n", "\n      "))
	}
	cmd := &cobra.Command{
		Use: "build --kind " + kinds + " --index <dir>",
		Example: `  gleaner graph build --kind mentions --index idx/2wiki
  gleaner graph build --kind knn --index idx/scifact --k-lex 2 --k-sem 2
  gleaner graph build --kind trigraph --index idx/2wiki --ner prose
  gleaner graph build --kind ketrag --index idx/musique --beta 0.8
  OPENAI_API_KEY=… gleaner graph build --kind ketrag --index idx/musique --extractor llm --llm-url https://api.openai.com/v1 --llm-model gpt-4o-mini`,
		Short: "Build a graph (edges of a kind, or a method's structure) over the index's nodes and store it in the index",
		Long:  long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return fmt.Errorf("--index is required")
			}
			if !slices.Contains(names(builds), kind) {
				return fmt.Errorf("--kind must be one of %s, got %q", strings.ReplaceAll(kinds, "|", ", "), kind)
			}
			cfgs, err := sf.configs(retrieve.NewBuildConfig, []string{kind})
			if err != nil {
				return err
			}
			return runBuild(cmd, g, dir, cfgs[0], biEncoder, pooling)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "index", "", "index folder")
	fl.StringVar(&kind, "kind", "", strings.ReplaceAll(kinds, "|", ", "))
	fl.StringVar(&biEncoder, "bi-encoder", "", "the bi-encoder folder the index's vectors came from (embeds what the build embeds)")
	fl.StringVar(&pooling, "pooling", "mean", "bi-encoder pooling: mean or cls")
	sf = addSettingFlags(fl, builds, "--kind")
	return cmd
}

// runBuild runs a configured build step on the index at dir and says what
// it stored.
func runBuild(cmd *cobra.Command, g *globals, dir string, cfg *retrieve.Config, biEncoder, pooling string) error {
	index.CleanDebris(g.log, dir)
	env := retrieve.BuildEnv{Backend: g.be, Logger: g.log, Progress: progress.New(os.Stderr, g.log, 2*time.Second),
		Getenv: os.Getenv, Out: cmd.OutOrStdout()}
	if biEncoder != "" {
		bi, err := openBiEncoder(g, biEncoder, pooling)
		if err != nil {
			return err
		}
		env.Embedder = models.Embedder(bi)
	}
	noteHost(g, cfg.Name(), hostOf(retrieve.Builds(), cfg.Name()))
	start := time.Now()
	line, err := retrieve.Build(cmd.Context(), env, dir, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s; stored in %s in %v%s\n", line, dir, time.Since(start).Round(time.Millisecond), readersOf(cfg.Name()))
	return nil
}

// readersOf names the methods that read the section a build step writes.
func readersOf(build string) string {
	var section string
	for _, b := range retrieve.Builds() {
		if b.Name == build {
			section = b.Section
		}
	}
	var ms []string
	for _, m := range retrieve.Methods() {
		if section != "" && slices.Contains(m.Reads, section) {
			ms = append(ms, m.Name)
		}
	}
	if len(ms) == 0 {
		return ""
	}
	return " (read by --method " + strings.Join(ms, ", ") + ")"
}

func newGraphStats(g *globals) *cobra.Command {
	var dir, kind, queries, biEncoder, pooling string
	var limit, skip int
	var rf, mf *settingFlags
	reports := retrieve.Reports()
	cmd := &cobra.Command{
		Use: "stats --index <dir> [--kind k] [--queries q.jsonl]",
		Example: `  gleaner graph stats --index idx/2wiki --kind mentions --queries data/2wiki/queries.jsonl
  gleaner graph stats --index idx/2wiki --kind trigraph --queries data/2wiki/queries.jsonl --limit 200
  gleaner graph stats --index idx/musique --kind ketrag --betas 0.2,0.5,0.8,1`,
		Short: "Print graph statistics: degrees and how many gold nodes lie within 1 and 2 hops of the BM25 top-10; for a method's structure (" + strings.Join(names(reports), ", ") + "), its own report",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if slices.Contains(names(reports), kind) {
				return runReport(cmd, g, reportRun{dir: dir, kind: kind, queries: queries, biEncoder: biEncoder, pooling: pooling, limit: limit, skip: skip, rf: rf, mf: mf})
			}
			if err := refuseGiven(cmd, append(rf.names, mf.names...), "--kind "+strings.Join(names(reports), ", ")); err != nil {
				return err
			}
			ix, err := openIndex(g, dir, biEncoder, pooling)
			if err != nil {
				return err
			}
			defer ix.Close()
			if kind != "" && !slices.Contains(ix.Meta.GraphKinds, kind) {
				return fmt.Errorf("--kind %q: the index has the graph kinds %v (and %s when built)", kind, ix.Meta.GraphKinds, strings.Join(names(reports), ", "))
			}
			var kinds []string
			if kind != "" {
				kinds = []string{kind}
			}
			adj := ix.View(kinds...)
			printDegrees(cmd.OutOrStdout(), adj)
			if queries == "" {
				return nil
			}
			qs, err := corpus.ReadQueries(queries, nil, corpus.ReadOptions{Logger: g.log})
			if err != nil {
				return err
			}
			return printReach(cmd.Context(), cmd.OutOrStdout(), ix, adj, qs)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "index", "", "index folder")
	fl.StringVar(&kind, "kind", "", "only edges of this kind (default: all), or a method's structure: "+strings.Join(names(reports), ", "))
	fl.StringVar(&queries, "queries", "", "queries with gold ids, for the reachability figures")
	fl.IntVar(&limit, "limit", 0, "reports: only the first N queries (0: all; after --skip)")
	fl.IntVar(&skip, "skip", 0, "reports: leave out the first N queries")
	fl.StringVar(&biEncoder, "bi-encoder", "", "the bi-encoder folder the index's vectors came from (queries embed with it)")
	fl.StringVar(&pooling, "pooling", "mean", "bi-encoder pooling: mean or cls")
	rf = addSettingFlags(fl, reports, "--kind")
	mf = addSettingFlags(fl, withoutParams(retrieve.Methods(), rf.names), "a report's method:")
	return cmd
}

// withoutParams drops the settings named (another flag set has them).
func withoutParams(infos []retrieve.Info, drop []string) []retrieve.Info {
	out := make([]retrieve.Info, len(infos))
	for i, in := range infos {
		in.Params = slices.DeleteFunc(slices.Clone(in.Params), func(p *retrieve.Param) bool { return slices.Contains(drop, p.Name()) })
		out[i] = in
	}
	return out
}

// refuseGiven refuses flags that apply to another choice.
func refuseGiven(cmd *cobra.Command, flags []string, applies string) error {
	for _, n := range flags {
		if cmd.Flags().Changed(n) {
			return fmt.Errorf("--%s applies to %s", n, applies)
		}
	}
	return nil
}

// reportRun is one `graph stats --kind <report>`.
type reportRun struct {
	dir, kind, queries, biEncoder, pooling string
	limit, skip                            int
	rf, mf                                 *settingFlags
}

// runReport runs a registered report, its methods configured by the
// method flags.
func runReport(cmd *cobra.Command, g *globals, r reportRun) error {
	cfgs, err := r.rf.configs(retrieve.NewReportConfig, []string{r.kind})
	if err != nil {
		return err
	}
	ix, err := openIndex(g, r.dir, r.biEncoder, r.pooling)
	if err != nil {
		return err
	}
	defer ix.Close()
	env := retrieve.ReportEnv{Env: retrieve.Env{Backend: g.be, Logger: g.log}, Out: cmd.OutOrStdout(),
		Method: func(name string) (*retrieve.Config, error) {
			cs, err := r.mf.configs(retrieve.NewConfig, []string{name})
			if err != nil {
				return nil, err
			}
			return cs[0], nil
		}}
	if r.queries != "" {
		qs, err := corpus.ReadQueries(r.queries, nil, corpus.ReadOptions{Logger: g.log})
		if err != nil {
			return err
		}
		if env.Queries, err = sliceQueries(qs, r.skip, r.limit); err != nil {
			return err
		}
	}
	return retrieve.Report(cmd.Context(), env, ix, cfgs[0])
}

func printDegrees(w io.Writer, a *graphops.Adjacency) {
	n := a.N()
	deg := make([]int, n)
	isolated := 0
	for v := 0; v < n; v++ {
		deg[v] = int(a.Ptr[v+1] - a.Ptr[v])
		if deg[v] == 0 {
			isolated++
		}
	}
	slices.Sort(deg)
	pct := func(p float64) int { return deg[min(n-1, int(p*float64(n)))] }
	fmt.Fprintf(w, "nodes %d, undirected edge endpoints %d (edges %d), isolated %d (%.1f%%)\n", n, a.Ptr[n], a.Ptr[n]/2, isolated, 100*float64(isolated)/float64(n))
	fmt.Fprintf(w, "degree p50 %d, p90 %d, p99 %d, max %d, mean %.2f\n", pct(0.5), pct(0.9), pct(0.99), deg[n-1], float64(a.Ptr[n])/float64(n))
}

func printReach(ctx context.Context, w io.Writer, ix *index.Index, a *graphops.Adjacency, qs []corpus.Query) error {
	var gold, in0, in1, in2 int
	for _, q := range qs {
		var seeds []int32
		for _, h := range ix.BM25.Search(q.Text, 10) {
			seeds = append(seeds, h.Index)
		}
		b, err := graphops.ShortestPaths(ctx, a, seeds, 2)
		if err != nil {
			return err
		}
		for _, id := range q.Gold {
			v, ok := ix.Lookup(id)
			if !ok {
				return fmt.Errorf("query %q: gold id %q is not in the index", q.ID, id)
			}
			gold++
			switch d := b.Dist[v]; {
			case d == 0:
				in0++
				fallthrough
			case d == 1:
				in1++
				fallthrough
			case d == 2:
				in2++
			}
		}
	}
	fmt.Fprintf(w, "gold nodes %d over %d queries: in BM25 top-10 %.1f%%, within 1 hop %.1f%%, within 2 hops %.1f%%\n",
		gold, len(qs), 100*float64(in0)/float64(gold), 100*float64(in1)/float64(gold), 100*float64(in2)/float64(gold))
	return nil
}
