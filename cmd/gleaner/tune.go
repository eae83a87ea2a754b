package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/internal/progress"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/tune"
)

func newTune(g *globals) *cobra.Command {
	var dir, queries, methods, out, groupBy, biEncoder, pooling string
	var force bool
	o := tune.DefaultOptions()
	var sf *settingFlags
	cmd := &cobra.Command{
		Use:   "tune --index <dir> --queries dev.jsonl -o profile.json",
		Short: "Choose a method and its main settings on labelled questions, cross-validated",
		Long: `Try every candidate method of the index (those a corpus like yours can use, each
with its main settings: docs/choosing.md) on labelled questions, print one row per
method, and write the best as a profile that query, eval and serve take (--profile).

The questions (JSONL: {"id", "text", "gold": [ids]} or "answers": [strings]; docs/choosing.md
shows how to write them) are split into --folds folds. A method's "cv" column chooses
its settings on all folds but one and scores the questions of that one, for each fold in
turn: an estimate of how the choice does on new questions. "dev" is the chosen settings'
score on every question, which is optimistic (it is what was chosen on). The profile is
the configuration with the best dev score (a tie goes to the better cv); the line under the table gives the cv of the
whole choice. Keep questions you report apart: tune on a dev set, evaluate the profile
on held-out questions with gleaner eval --profile.

Methods that need a structure the index lacks (a graph, a Tri-Graph, KET-RAG's section)
are listed as skipped, with the command that builds it. Setting flags given (e.g.
--graph-kind links) apply to every candidate, and that setting is not tuned.`,
		Example: `  gleaner tune --index idx/wiki --queries examples/wiki-questions/dev.jsonl --group-by document -o wiki.profile.json
  gleaner eval --index idx/wiki --queries examples/wiki-questions/test.jsonl --profile wiki.profile.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case dir == "":
				return fmt.Errorf("--index is required")
			case queries == "":
				return fmt.Errorf("--queries is required: labelled questions (docs/choosing.md)")
			case out == "":
				return fmt.Errorf("-o <profile.json> is required")
			}
			if err := retrieve.CheckProfileTarget(out, force); err != nil {
				return fmt.Errorf("-o %w", err)
			}
			if err := tune.CheckMetric(o.Metric); err != nil {
				return fmt.Errorf("--metric: %w", err)
			}
			if methods != "" {
				names, err := methodList(methods)
				if err != nil {
					return err
				}
				o.Methods = names
			}
			o.GroupBy, o.Base = groupBy, sf.overrides()
			if err := retrieve.CheckGroupBy(groupBy); err != nil {
				return fmt.Errorf("--group-by: %w", err)
			}
			qs, err := corpus.ReadQueries(queries, nil, corpus.ReadOptions{Logger: g.log})
			if err != nil {
				return err
			}
			ix, err := openIndex(g, dir, biEncoder, pooling)
			if err != nil {
				return err
			}
			defer ix.Close()
			o.Env = retrieve.Env{Backend: g.be, Logger: g.log}
			o.Logger, o.Progress = g.log, progress.New(os.Stderr, g.log, 5*time.Second)
			res, err := tune.Run(cmd.Context(), ix, qs, o)
			if err != nil {
				return err
			}
			printTune(cmd.OutOrStdout(), res)
			abs, _ := filepath.Abs(dir)
			absQ, _ := filepath.Abs(queries)
			rec := retrieve.TuneRecord{Index: abs, Queries: absQ, Seed: o.Seed, Created: time.Now().UTC().Format(time.RFC3339)}
			if err := retrieve.WriteProfile(out, res.Profile(groupBy, rec, o.Base), force); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %s (use it with --profile %s)\n", out, res.Chosen, out)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "index", "", "index folder")
	fl.StringVar(&queries, "queries", "", "labelled questions (JSONL with gold ids or answers)")
	fl.StringVar(&methods, "method", "", "candidate methods, comma-separated (default: every method with a tuning: "+strings.Join(tunable(), ", ")+")")
	fl.StringVar(&o.Metric, "metric", o.Metric, "what to maximise, at a cut-off k: "+strings.Join(tune.Metrics, "@k, ")+"@k")
	fl.IntVar(&o.Folds, "folds", o.Folds, "folds of the cross-validation (≥ 2)")
	fl.Uint64Var(&o.Seed, "seed", o.Seed, "shuffles the questions into folds")
	fl.IntVar(&o.Concurrency, "concurrency", o.Concurrency, "questions in flight per evaluation")
	fl.StringVar(&groupBy, "group-by", retrieve.GroupPassage, "passage, or document: judge documents ranked by their best passage (questions whose gold names files)")
	fl.StringVarP(&out, "out", "o", "", "write the profile here")
	fl.BoolVar(&force, "force", false, "replace an existing profile")
	fl.StringVar(&biEncoder, "bi-encoder", "", "the bi-encoder folder the index's vectors came from")
	fl.StringVar(&pooling, "pooling", "mean", "bi-encoder pooling: mean or cls")
	sf = addSettingFlags(fl, retrieve.Methods(), "--method")
	return cmd
}

// tunable lists the methods gleaner tune tries by default.
func tunable() []string {
	var out []string
	for _, in := range retrieve.Methods() {
		if in.Tune != nil {
			out = append(out, in.Name)
		}
	}
	return out
}

// printTune prints the methods' table, the skipped methods and the choice.
func printTune(out io.Writer, r *tune.Result) {
	fmt.Fprintf(out, "%d questions, %d folds, %s\n", r.N, r.Folds, r.Metric)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "method\tcv\tdev\tp50 ms\ttried\tbest settings\n")
	for _, m := range r.Methods {
		settings := strings.TrimPrefix(m.Best.String(), m.Method)
		if settings == "" {
			settings = " (defaults)"
		}
		fmt.Fprintf(w, "%s\t%.3f\t%.3f\t%.2f\t%d\t%s\n", m.Method, m.CV, m.Dev, m.P50MS, m.Tried, strings.TrimSpace(settings))
	}
	w.Flush()
	for _, s := range r.Skipped {
		fmt.Fprintf(out, "skipped %s: %s\n", s.Method, s.Reason)
	}
	fmt.Fprintf(out, "chosen: %s — %s dev %.3f; the whole choice cross-validated: %.3f\n", r.Chosen, r.Metric, r.Dev, r.CV)
	fmt.Fprintf(out, "(cv: settings chosen on the other folds, scored on each; choosing among every method's settings overfits more than within one, so that last figure is usually lower)\n")
	if r.N < 20 {
		fmt.Fprintf(out, "note: %d questions: one question moves a score by %.2f or more, so differences this small are noise; write 20 or more\n", r.N, 1/float64(r.N))
	}
}
