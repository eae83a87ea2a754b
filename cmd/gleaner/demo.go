package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/corpus/synth"
	"github.com/gleaner-rag/gleaner/eval"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/progress"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func newDemo(g *globals) *cobra.Command {
	var out string
	var seed uint64
	var people, queries int
	cmd := &cobra.Command{
		Use: "demo [--out demo]",
		Example: `  gleaner demo
  gleaner demo --out /tmp/demo --people 400`,
		Short: "Generate a synthetic multi-hop corpus graph, index it and evaluate every method",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := synth.Generate(synth.Options{Seed: seed, People: people, Queries: queries})
			cdir, idir := filepath.Join(out, "corpus"), filepath.Join(out, "index")
			if err := corpus.Write(cdir, c); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "corpus: %s (%d nodes, %d edges, %d multi-hop questions)\n", cdir, len(c.Nodes), len(c.Edges), len(c.Queries))
			fmt.Fprintf(cmd.OutOrStdout(), "indexing: BM25, LSA vectors, and training the lexical reranker's head\n")
			err := index.Build(cmd.Context(), c, idir, index.WithLogger(g.log), index.WithSource(cdir),
				index.WithProgress(progress.New(os.Stderr, g.log, 2*time.Second)))
			if err != nil {
				return err
			}
			if err := demoSections(cmd.Context(), g, idir, cmd.OutOrStdout()); err != nil {
				return err
			}
			ix, err := index.Open(idir, store.OpenOptions{})
			if err != nil {
				return err
			}
			defer ix.Close()
			var ms []retrieve.Method
			defer func() { retrieve.CloseAll(context.Background(), ms...) }()
			var skipped []string
			for _, name := range retrieve.Names() {
				m, err := retrieve.NewNamed(name, ix, retrieve.Env{Backend: g.be, Logger: g.log})
				if errors.Is(err, index.ErrNotBuilt) { // a section the demo cannot build (a trained encoder needs a question set)
					skipped = append(skipped, fmt.Sprintf("%s (%v)", name, err))
					continue
				}
				if err != nil {
					return err
				}
				ms = append(ms, m)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "evaluating %d methods on %d questions\n", len(ms), len(c.Queries))
			rep, err := eval.Evaluate(cmd.Context(), ix, c.Queries, ms, eval.Options{K: 10, Logger: g.log, RunDir: filepath.Join(out, "runs")})
			if err != nil {
				return err
			}
			rep.Queries = filepath.Join(cdir, corpus.QueriesFile)
			if err := rep.WriteJSON(filepath.Join(out, "report.json")); err != nil {
				return err
			}
			var table bytes.Buffer
			if err := rep.WriteTable(&table); err != nil {
				return err
			}
			tpath := filepath.Join(out, "table.txt")
			if err := corpus.WriteFileAtomic(tpath, func(w io.Writer) error { _, err := w.Write(table.Bytes()); return err }); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "\n%s\n", table.String())
			fmt.Fprintf(w, "wrote %s: corpus/ (JSONL), index/, runs/ (TREC runs), report.json and table.txt (the table above)\n", out)
			for _, sk := range skipped {
				fmt.Fprintf(w, "not run: %s\n", sk)
			}
			fmt.Fprintln(w)
			bin := os.Args[0]
			fmt.Fprintf(w, "next, try:\n")
			fmt.Fprintf(w, "  %s query --index %s --method ppr -k 5 %q\n", bin, idir, c.Queries[0].Text)
			fmt.Fprintf(w, "  %s graph stats --kind trigraph --index %s --queries %s\n", bin, idir, filepath.Join(cdir, corpus.QueriesFile))
			fmt.Fprintf(w, "  %s eval --index %s --method bm25,fastinsight --first-stage hybrid --columns recall@2,recall@5,recall@10,ndcg@10\n", bin, idir)
			fmt.Fprintf(w, "  %s index info %s\n", bin, idir)
			fmt.Fprintf(w, "  and your own documents: README.md, \"Your own documents\"\n")
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "demo", "folder for the generated corpus, index, runs and report")
	cmd.Flags().Uint64Var(&seed, "seed", 7, "generator seed")
	cmd.Flags().IntVar(&people, "people", 600, "number of person passages")
	cmd.Flags().IntVar(&queries, "queries", 300, "number of questions")
	return cmd
}

// demoSections builds every section a graph build step makes (the
// Tri-Graph, KET-RAG's structures), so every method that can runs; entity
// extractors read prose's NER and the corpus's titles.
func demoSections(ctx context.Context, g *globals, idir string, out io.Writer) error {
	var ov retrieve.Overrides
	ov.Set("ner", "both")
	for _, b := range retrieve.Builds() {
		if b.Group != retrieve.BuildGraph || b.Section == "" {
			continue
		}
		cfg, err := retrieve.NewBuildConfig(b.Name)
		if err != nil {
			return err
		}
		if err := ov.Apply(cfg); err != nil {
			return err
		}
		fmt.Fprintf(out, "building %s: %s\n", b.Name, b.Summary)
		env := retrieve.BuildEnv{Backend: g.be, Logger: g.log, Progress: progress.New(os.Stderr, g.log, 2*time.Second)}
		if _, err := retrieve.Build(ctx, env, idir, cfg); err != nil {
			return fmt.Errorf("demo: building %s: %w", b.Name, err)
		}
	}
	return nil
}
