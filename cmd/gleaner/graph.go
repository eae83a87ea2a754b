package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func newGraph(g *globals) *cobra.Command {
	cmd := groupCommand("graph", "Build corpus graphs into an index and describe them")
	cmd.AddCommand(newGraphBuild(g), newGraphStats(g))
	return cmd
}

func newGraphBuild(g *globals) *cobra.Command {
	var dir, kind string
	var mo graphops.MentionOptions
	ko := graphops.DefaultKNNOptions()
	tf := &triGraphFlags{o: index.DefaultTriGraphOptions()}
	kf := &ketragFlags{}
	cmd := &cobra.Command{
		Use: "build --kind mentions|knn|trigraph|ketrag --index <dir>",
		Example: `  gleaner graph build --kind mentions --index idx/2wiki
  gleaner graph build --kind knn --index idx/scifact --k-lex 2 --k-sem 2
  gleaner graph build --kind trigraph --index idx/2wiki --ner prose
  gleaner graph build --kind ketrag --index idx/musique --beta 0.8
  OPENAI_API_KEY=… gleaner graph build --kind ketrag --index idx/musique --extractor llm --llm-url https://api.openai.com/v1 --llm-model gpt-4o-mini`,
		Short: "Build a graph over the index's nodes and store its edges in the index (replacing that kind's edges)",
		Long: `Build a graph over the index's nodes.

  mentions  passage A → passage B when A's text contains B's title as a whole word, case-sensitively
            (one Aho–Corasick pass; titles shorter than --min-title-len runes and titles found in more
            than --max-title-hits passages are skipped)
  knn       KET-RAG's chunk graph: each node's top --k-lex lexical neighbours (most shared index terms)
            and top --k-sem semantic neighbours (vector cosine), undirected
  trigraph  NexusRAG's and LinearRAG's Tri-Graph (methods nexusrag, linearrag): entities found by --ner
            in every sentence, the sentence store, mention counts, entity and sentence vectors from the
            index's embedder, and the entity neighbour matrix W (--co-share, --sim-topk, --kappa,
            --w-alpha, --tau); stored beside the graph, which it leaves as it is
  ketrag    KET-RAG's structures (method ketrag; nodes are token chunks, see gleaner chunk): cl100k token
            counts; PageRank over the knn chunk graph (--k-lex, --k-sem, --pr-damping) picking the top --beta
            share of chunks (or --selection uniform); those merged into ≤ --unit-tokens units; the skeleton
            extracted from each unit by --extractor local (--ner entities, sentence co-occurrence) or llm
            (an OpenAI-compatible server; key from --llm-key-env; replies cached in --llm-cache) and merged
            by normalised name; --piece-tokens text units; the text–keyword graph and keyword vectors.
            Stored beside the graph, which it leaves as it is`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return fmt.Errorf("--index is required")
			}
			if err := flagsOfKind(cmd.Flags(), kind); err != nil {
				return err
			}
			if debris := store.Debris(dir); len(debris) > 0 {
				g.log.Warn("hidden folders left by interrupted builds; remove them to free the space", "folders", debris)
			}
			start := time.Now()
			if kind == "trigraph" {
				return runTriGraph(cmd, g, dir, tf, start)
			}
			if kind == "ketrag" {
				kf.o.KNN = ko
				return runKETRAG(cmd, g, dir, kf, tf.ner, tf.biEncoder, tf.pooling, tf.o.Workers, start)
			}
			edges, err := buildEdges(cmd.Context(), dir, kind, mo, ko)
			if err != nil {
				return err
			}
			if err := index.SetGraph(cmd.Context(), dir, kind, edges); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s graph: %d edges stored in %s in %v\n", kind, len(edges), dir, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "index", "", "index folder")
	fl.StringVar(&kind, "kind", "", "mentions, knn, trigraph or ketrag")
	fl.IntVar(&mo.MinTitleLen, "min-title-len", 4, "mentions: shortest title matched, in runes")
	fl.IntVar(&mo.MaxTitleHits, "max-title-hits", 0, "mentions: skip titles found in more passages than this (0: max(50, 1% of passages))")
	fl.IntVar(&ko.Lexical, "k-lex", ko.Lexical, "knn: lexical neighbours per node (0: none)")
	fl.IntVar(&ko.Semantic, "k-sem", ko.Semantic, "knn: semantic neighbours per node (0: none)")
	tf.add(fl)
	kf.add(fl)
	return cmd
}

// kindFlags names the flags that only one kind of graph build reads.
var kindFlags = map[string][]string{
	"mentions": {"min-title-len", "max-title-hits"},
	"knn":      {"k-lex", "k-sem"},
	"trigraph": {"ner", "workers", "co-share", "co-cap", "sim-topk", "kappa", "w-alpha", "tau", "bonus-whole-word", "bi-encoder", "pooling"},
	"ketrag":   append([]string{"ner", "workers", "k-lex", "k-sem", "bi-encoder", "pooling"}, ketragOnly...),
}

// flagsOfKind refuses a flag given for another kind than --kind, so a
// mistyped command is not silently half-applied.
func flagsOfKind(fl *pflag.FlagSet, kind string) error {
	mine, ok := kindFlags[kind]
	if !ok {
		return fmt.Errorf("--kind must be mentions, knn, trigraph or ketrag, got %q", kind)
	}
	for _, k := range []string{"mentions", "knn", "trigraph", "ketrag"} { // a fixed order: the same message every run
		for _, n := range kindFlags[k] {
			if fl.Changed(n) && !slices.Contains(mine, n) {
				return fmt.Errorf("--%s applies to --kind %s, not --kind %s", n, k, kind)
			}
		}
	}
	return nil
}

func buildEdges(ctx context.Context, dir, kind string, mo graphops.MentionOptions, ko graphops.KNNOptions) ([]graphops.Edge, error) {
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		return nil, err
	}
	defer ix.Close()
	switch kind {
	case "mentions":
		titles, texts := make([]string, ix.N()), make([]string, ix.N())
		for i := range titles {
			titles[i], texts[i] = ix.Title(i), ix.Text(i)
		}
		return graphops.MentionEdges(ctx, titles, texts, mo)
	case "knn":
		return graphops.KNNEdges(ctx, ix.Postings, ix.Vectors, ix.Meta.Dims, ko)
	}
	return nil, fmt.Errorf("--kind must be mentions, knn, trigraph or ketrag, got %q", kind)
}

func newGraphStats(g *globals) *cobra.Command {
	var dir, kind, queries, biEncoder, pooling string
	var limit, skip int
	var betas string
	var mf *methodFlags
	cmd := &cobra.Command{
		Use: "stats --index <dir> [--kind k] [--queries q.jsonl]",
		Example: `  gleaner graph stats --index idx/2wiki --kind mentions --queries data/2wiki/queries.jsonl
  gleaner graph stats --index idx/2wiki --kind trigraph --queries data/2wiki/queries.jsonl --limit 200
  gleaner graph stats --index idx/musique --kind ketrag --betas 0.2,0.5,0.8,1`,
		Short: "Print graph statistics: degrees and how many gold nodes lie within 1 and 2 hops of the BM25 top-10; for the trigraph, entity statistics and how question entities reach the gold passages",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ix, err := openIndex(g, dir, biEncoder, pooling)
			if err != nil {
				return err
			}
			defer ix.Close()
			if kind != "" && kind != "trigraph" && kind != "ketrag" && !slices.Contains(ix.Meta.GraphKinds, kind) {
				return fmt.Errorf("--kind %q: the index has the graph kinds %v (and trigraph and ketrag when built)", kind, ix.Meta.GraphKinds)
			}
			if kind == "ketrag" {
				bs, err := parseBetas(betas)
				if err != nil {
					return err
				}
				if ix.KETRAG == nil {
					return fmt.Errorf("index %s: %w", dir, retrieve.ErrNoKETRAG)
				}
				return printKETRAGStats(cmd.OutOrStdout(), ix, bs)
			}
			if kind == "trigraph" {
				if ix.TriGraph == nil {
					return fmt.Errorf("index %s: %w", dir, retrieve.ErrNoTriGraph)
				}
				var qs []corpus.Query
				if queries != "" {
					if qs, err = corpus.ReadQueries(queries, nil, corpus.ReadOptions{Logger: g.log}); err != nil {
						return err
					}
					if qs, err = sliceQueries(qs, skip, limit); err != nil {
						return err
					}
				}
				o, err := mf.options(mf.o.FastInsight.BMax)
				if err != nil {
					return err
				}
				return printTriGraphStats(cmd.Context(), cmd.OutOrStdout(), ix, qs, o)
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
	cmd.Flags().StringVar(&dir, "index", "", "index folder")
	cmd.Flags().StringVar(&kind, "kind", "", "only edges of this kind (default: all)")
	cmd.Flags().StringVar(&queries, "queries", "", "queries with gold ids, for the reachability figures")
	cmd.Flags().IntVar(&limit, "limit", 0, "trigraph: only the first N queries (0: all; after --skip)")
	cmd.Flags().IntVar(&skip, "skip", 0, "trigraph: leave out the first N queries")
	cmd.Flags().StringVar(&betas, "betas", "0.2,0.5,0.8,1", "ketrag: the β shares of the extraction cost table")
	cmd.Flags().StringVar(&biEncoder, "bi-encoder", "", "the bi-encoder folder the index's vectors came from (trigraph queries embed with it)")
	cmd.Flags().StringVar(&pooling, "pooling", "mean", "bi-encoder pooling: mean or cls")
	mf = addMethodFlags(cmd.Flags(), g)
	return cmd
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
