package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/corpus"
)

func newImport(g *globals) *cobra.Command {
	var out, split string
	var skip bool
	chunks := corpus.DefaultChunkOptions()
	cmd := &cobra.Command{
		Use: "import beir|2wiki|ketrag|graphrag-bench|jsonl <path> -o <dir>",
		Example: `  gleaner import beir ../shared/datasets/beir_scifact -o data/scifact
  gleaner import beir ../shared/datasets/beir_scifact --split train -o data/scifact-train
  gleaner import 2wiki ../shared/datasets/hipporag_2wikimultihopqa -o data/2wiki
  gleaner import graphrag-bench ../shared/datasets/graphrag_bench_medical -o data/medical --chunk-words 200`,
		Short: "Convert a dataset to gleaner JSONL (nodes.jsonl, edges.jsonl, queries.jsonl)",
		Long: `Convert a dataset to gleaner JSONL.

  beir   a BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv
  2wiki           the HippoRAG 2WikiMultihopQA layout: corpus.json, test_gfmrag.json
                  (gold passages, and the answers with their aliases)
  ketrag          KET-RAG's evaluation layout: document.txt (one passage per line,
                  node "l<line>") and qa-pairs.json (questions with answers only)
  graphrag-bench  a GraphRAG-Bench split: <name>_corpus.json (long documents, cut
                  into --chunk-words windows overlapping by --chunk-overlap words)
                  and <name>_questions.json (questions with answers only)
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
			case "beir":
				c, err = corpus.ReadBEIR(args[1], split, opt)
			case "2wiki":
				c, err = corpus.ReadTwoWiki(args[1], opt)
			case "ketrag":
				c, err = corpus.ReadKETRAG(args[1], opt)
			case "graphrag-bench":
				c, err = corpus.ReadGraphRAGBench(args[1], chunks, opt)
			case "jsonl":
				c, err = corpus.Load(args[1], opt)
			default:
				return fmt.Errorf("unknown format %q (want beir, 2wiki, ketrag, graphrag-bench or jsonl)", args[0])
			}
			if err != nil {
				return err
			}
			if err := corpus.Write(out, c); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d nodes, %d edges, %d queries\n", out, len(c.Nodes), len(c.Edges), len(c.Queries))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "output folder")
	cmd.Flags().StringVar(&split, "split", "test", "BEIR qrels split")
	cmd.Flags().IntVar(&chunks.Size, "chunk-words", chunks.Size, "graphrag-bench: words per chunk")
	cmd.Flags().IntVar(&chunks.Overlap, "chunk-overlap", chunks.Overlap, "graphrag-bench: words shared by consecutive chunks")
	cmd.Flags().BoolVar(&skip, "skip-invalid", false, "warn about and drop invalid records instead of failing")
	return cmd
}
