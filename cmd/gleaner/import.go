package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/corpus"
)

func newImport(g *globals) *cobra.Command {
	var out, split, pqSet string
	var hops int
	var skip, force bool
	chunks := corpus.DefaultChunkOptions()
	files := corpus.DefaultFilesOptions()
	cmd := &cobra.Command{
		Use: "import files|beir|2wiki|ketrag|graphrag-bench|pathquestion|metaqa|jsonl <path> -o <dir>",
		Example: `  gleaner import files ~/notes -o data/notes
  gleaner import files docs/ --exclude 'drafts/**' --max-words 300 -o data/docs
  gleaner import beir ../shared/datasets/beir_scifact -o data/scifact
  gleaner import beir ../shared/datasets/beir_scifact --split train -o data/scifact-train
  gleaner import 2wiki ../shared/datasets/hipporag_2wikimultihopqa -o data/2wiki
  gleaner import graphrag-bench ../shared/datasets/graphrag_bench_medical -o data/medical --chunk-words 200
  gleaner import pathquestion ../shared/datasets/pathquestion --set PQ-2H -o data/pq2h
  gleaner import metaqa ../shared/datasets/metaqa_partial_kb --hops 2 -o data/metaqa2`,
		Short: "Convert a dataset to gleaner JSONL (nodes.jsonl, edges.jsonl, queries.jsonl)",
		Long: `Convert a dataset to gleaner JSONL.

  files  a folder of your own documents (docs/importing.md): Markdown (front-matter,
         [[wiki links]]), HTML and plain text, recursively; each file is a document
         whose id is its path under the folder ('%', '#', spaces and other bytes ids
         cannot hold are percent-encoded: "My Notes.md" is "My%20Notes.md"), cut into
         passages of at most --max-words words at headings and paragraphs, with ids
         "<document>#1", "#2", …; links between files become "links" edges; links to
         missing files are listed, not dropped silently
  beir   a BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv
  2wiki           the HippoRAG 2WikiMultihopQA layout: corpus.json, test_gfmrag.json
                  (gold passages, and the answers with their aliases)
  ketrag          KET-RAG's evaluation layout: document.txt (one passage per line,
                  node "l<line>") and qa-pairs.json (questions with answers only)
  graphrag-bench  a GraphRAG-Bench split: <name>_corpus.json (long documents, cut
                  into --chunk-words windows overlapping by --chunk-overlap words)
                  and <name>_questions.json (questions with answers only)
  pathquestion    a PathQuestion set (--set PQ-2H, PQ-3H, PQL-2H or PQL-3H) with its knowledge base:
                  entities become nodes, triples "kg" edges with their relation, questions carry
                  their topic entity and gold answer entities; split train/dev/test 8:1:1 with a
                  fixed seed (queries-train.jsonl, queries-dev.jsonl, queries.jsonl = test)
  metaqa          MetaQA's knowledge base (kb.txt or kb_partial.txt) and its --hops 1|2|3 test
                  questions ("[topic]" in the text); questions whose topic is not in the knowledge
                  base or whose answers lie beyond --hops hops of it are dropped (the count is
                  printed); the rest split 8:1:1 as above
  jsonl           a gleaner JSONL folder (validated and rewritten)

Answer-only datasets are evaluated by answer_recall@k (gleaner eval).`,
		Args: exactArgs(2, "a format and a dataset path"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("-o <dir> is required")
			}
			if err := corpus.CheckTarget(out); err != nil { // before reading the dataset
				return fmt.Errorf("-o %s: %w", out, err)
			}
			opt := corpus.ReadOptions{SkipInvalid: skip, Logger: g.log}
			var c *corpus.Corpus
			var err error
			switch args[0] {
			case "files":
				files.SkipInvalid, files.Logger = skip, g.log
				var rep *corpus.FilesReport
				if c, rep, err = corpus.FromFiles(cmd.Context(), args[1], files); err == nil {
					printFilesReport(cmd.OutOrStdout(), rep)
				}
			case "beir":
				c, err = corpus.ReadBEIR(args[1], split, opt)
			case "2wiki":
				c, err = corpus.ReadTwoWiki(args[1], opt)
			case "ketrag":
				c, err = corpus.ReadKETRAG(args[1], opt)
			case "graphrag-bench":
				c, err = corpus.ReadGraphRAGBench(args[1], chunks, opt)
			case "pathquestion":
				c, err = corpus.ReadPathQuestion(args[1], pqSet, opt)
			case "metaqa":
				var dropped int
				if c, dropped, err = corpus.ReadMetaQA(args[1], hops, opt); err == nil {
					fmt.Fprintf(cmd.OutOrStdout(), "metaqa %d-hop: %d answerable questions kept, %d dropped (topic not in the knowledge base, or an answer beyond %d hops)\n",
						hops, len(c.TrainQueries)+len(c.DevQueries)+len(c.Queries), dropped, hops)
				}
			case "jsonl":
				c, err = corpus.Load(args[1], opt)
			default:
				return fmt.Errorf("unknown format %q (want files, beir, 2wiki, ketrag, graphrag-bench, pathquestion, metaqa or jsonl)", args[0])
			}
			if err != nil {
				return err
			}
			if err := keepQuestions(out, c, force); err != nil {
				return err
			}
			if err := corpus.Write(out, c); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d nodes, %d edges, %d queries", out, len(c.Nodes), len(c.Edges), len(c.Queries))
			if len(c.TrainQueries)+len(c.DevQueries) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), " (test split; train %d, dev %d)", len(c.TrainQueries), len(c.DevQueries))
			}
			fmt.Fprintln(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "output folder")
	cmd.Flags().StringVar(&split, "split", "test", "BEIR qrels split")
	cmd.Flags().IntVar(&chunks.Size, "chunk-words", chunks.Size, "graphrag-bench: words per chunk")
	cmd.Flags().IntVar(&chunks.Overlap, "chunk-overlap", chunks.Overlap, "graphrag-bench: words shared by consecutive chunks")
	cmd.Flags().StringVar(&pqSet, "set", "PQ-2H", "pathquestion: PQ-2H, PQ-3H, PQL-2H or PQL-3H")
	cmd.Flags().IntVar(&hops, "hops", 1, "metaqa: the question set, 1, 2 or 3 hops")
	cmd.Flags().BoolVar(&force, "force", false, "replace a corpus whose question files (queries*.jsonl) the new one would remove")
	cmd.Flags().BoolVar(&skip, "skip-invalid", false, "warn about and drop invalid records (files: bad files) instead of failing")
	cmd.Flags().StringSliceVar(&files.Include, "include", files.Include, "files: globs of the files to read (a pattern with '/' matches the whole path; ** spans folders)")
	cmd.Flags().StringSliceVar(&files.Exclude, "exclude", nil, "files: globs of files and folders to leave out")
	cmd.Flags().BoolVar(&files.Hidden, "hidden", false, "files: read files and folders whose names start with '.'")
	cmd.Flags().IntVar(&files.MaxWords, "max-words", files.MaxWords, "files: most words in one passage")
	cmd.Flags().IntVar(&files.MinWords, "min-words", files.MinWords, "files: a heading starts a new passage only once the open one has this many words (0: at every heading)")
	cmd.Flags().Int64Var(&files.MaxFileBytes, "max-file-bytes", files.MaxFileBytes, "files: refuse larger files")
	return cmd
}

// printFilesReport says what an import of files found, with every
// dangling link up to a screenful.
func printFilesReport(w io.Writer, rep *corpus.FilesReport) {
	fmt.Fprintf(w, "read %d documents (%d other files ignored): %d passages, %d link edges, %d links to URLs dropped\n",
		rep.Files, rep.Ignored, rep.Passages, rep.Links, rep.External)
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(w, "skipped %d bad files (--skip-invalid):\n", len(rep.Skipped))
		for _, s := range rep.Skipped {
			fmt.Fprintf(w, "  %s: %s\n", s.Path, s.Reason)
		}
	}
	for _, p := range rep.NotFollowed {
		fmt.Fprintf(w, "not followed: %s (a symbolic link to a folder)\n", p)
	}
	for _, a := range rep.Ambiguous {
		fmt.Fprintf(w, "ambiguous: %s:%d → [[%s]] fits several documents; linked to the first in path order\n", a.From, a.Line, a.Target)
	}
	if len(rep.Dangling) == 0 {
		return
	}
	fmt.Fprintf(w, "%d dangling links (their targets are not in the folder):\n", len(rep.Dangling))
	const show = 20
	for _, d := range rep.Dangling[:min(show, len(rep.Dangling))] {
		if d.Path != "" {
			fmt.Fprintf(w, "  %s:%d → %s (%s)\n", d.From, d.Line, d.Target, d.Path)
		} else {
			fmt.Fprintf(w, "  %s:%d → %s\n", d.From, d.Line, d.Target)
		}
	}
	if len(rep.Dangling) > show {
		fmt.Fprintf(w, "  … and %d more\n", len(rep.Dangling)-show)
	}
}

// keepQuestions refuses to replace a corpus folder's question files
// (perhaps written by hand) with a corpus that has none, unless forced.
func keepQuestions(dir string, c *corpus.Corpus, force bool) error {
	if force || len(c.Queries)+len(c.TrainQueries)+len(c.DevQueries) > 0 {
		return nil
	}
	for _, name := range []string{corpus.QueriesFile, corpus.TrainQueriesFile, corpus.DevQueriesFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return fmt.Errorf("-o %s holds %s, which this import (it has no questions) would remove: move it out of the folder first, or pass --force", dir, name)
		}
	}
	return nil
}
