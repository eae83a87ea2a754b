package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/models/tiktoken"
)

func newChunk(g *globals) *cobra.Command {
	var out string
	o := corpus.DefaultTokenChunkOptions()
	cmd := &cobra.Command{
		Use:   "chunk <corpus> -o <dir>",
		Short: "Cut a corpus into cl100k_base token chunks, as KET-RAG and GraphRAG do",
		Long: `Cut a gleaner corpus into token chunks (OpenAI's cl100k_base tokens, embedded,
nothing downloaded): GraphRAG's chunker — --tokens per chunk, consecutive chunks
sharing --overlap tokens, never across a document — then KET-RAG's split of each
chunk into --split-token pieces. The pieces become nodes "0".."n-1"; chunks.jsonl
records each one's document, chunk, token offsets and source nodes; questions'
gold nodes map to the pieces holding them. Source edges are not carried over.

  --documents node    every node is a document (no chunk spans two nodes)
  --documents title   consecutive nodes with the same title form one document
  --documents corpus  the whole corpus is one document, lines joined by "\n"
                      (KET-RAG's document.txt, as its evaluation chunks it)`,
		Example: `  gleaner import ketrag ../shared/datasets/ketrag_musique -o data/musique-lines
  gleaner chunk data/musique-lines --documents corpus -o data/musique`,
		Args: exactArgs(1, "a corpus folder"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("-o <dir> is required")
			}
			if err := checkChunkFlags(o); err != nil {
				return err
			}
			if err := corpus.CheckTarget(out); err != nil {
				return fmt.Errorf("-o %s: %w", out, err)
			}
			if sameFolder(args[0], out) {
				return fmt.Errorf("-o %s is the corpus being chunked; write the chunks to another folder", out)
			}
			c, err := corpus.Load(args[0], corpus.ReadOptions{Logger: g.log})
			if err != nil {
				return err
			}
			tok, err := tiktoken.CL100K()
			if err != nil {
				return err
			}
			chunked, infos, err := corpus.ChunkByTokens(c, tok, o)
			if err != nil {
				return err
			}
			chunked.Chunks = infos
			if o.Documents == corpus.DocumentPerTitle && !hasTitles(c) {
				g.log.Warn("chunk: --documents title, and no node has a title: the whole corpus is one document")
			}
			if len(c.Edges) > 0 {
				g.log.Warn("chunk: source edges are not carried over to chunks", "edges", len(c.Edges))
			}
			if err := corpus.Write(out, chunked); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d pieces of ≤ %d tokens from %d chunks of ≤ %d tokens (%d source nodes), %d queries\n",
				out, len(chunked.Nodes), min(o.Split, o.Size), infos[len(infos)-1].Chunk+1, o.Size, len(c.Nodes), len(chunked.Queries))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&out, "out", "o", "", "output folder")
	f.IntVar(&o.Size, "tokens", o.Size, "tokens per chunk (ℓ; KET-RAG's high-accuracy setting is 150)")
	f.IntVar(&o.Overlap, "overlap", o.Overlap, "tokens shared by consecutive chunks")
	f.IntVar(&o.Split, "split", o.Split, "tokens per piece each chunk is split into (≥ --tokens keeps chunks whole)")
	f.StringVar(&o.Documents, "documents", o.Documents, "what a chunk may not cross: node, title or corpus")
	return cmd
}

// checkChunkFlags names the flag a bad chunk setting came from.
func checkChunkFlags(o corpus.TokenChunkOptions) error {
	switch {
	case o.Size < 1:
		return fmt.Errorf("--tokens must be ≥ 1, got %d", o.Size)
	case o.Overlap < 0 || o.Overlap >= o.Size:
		return fmt.Errorf("--overlap must be in [0, --tokens), got %d with --tokens %d", o.Overlap, o.Size)
	case o.Split < 1:
		return fmt.Errorf("--split must be ≥ 1 token (≥ --tokens keeps chunks whole), got %d", o.Split)
	}
	if err := o.Validate(); err != nil {
		return fmt.Errorf("--documents: %w", err)
	}
	return nil
}

func hasTitles(c *corpus.Corpus) bool {
	for _, n := range c.Nodes {
		if n.Title != "" {
			return true
		}
	}
	return false
}

// sameFolder reports whether a and b name one existing folder.
func sameFolder(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}
