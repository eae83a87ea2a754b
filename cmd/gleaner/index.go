package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/wal"
	"github.com/gleaner-rag/gleaner/internal/progress"
	"github.com/gleaner-rag/gleaner/models/headtrain"
	"github.com/gleaner-rag/gleaner/models/lexical"
	"github.com/gleaner-rag/gleaner/models/transformer"
	"github.com/gleaner-rag/gleaner/retrieve"
)

type indexFlags struct {
	out, embedder, vectors, metric string
	biEncoder, pooling, tokenizer  string
	quantize                       string
	dims, lsaSample                int
	seed                           uint64
	k1, b                          float64
	skip, trainHead                bool
}

func newIndex(g *globals) *cobra.Command {
	f := &indexFlags{}
	cmd := &cobra.Command{
		Use: "index <corpus-dir> -o <index-dir>",
		Example: `  gleaner index data/scifact -o idx/scifact
  gleaner index data/x -o idx/x --train-head=false --dims 128
  gleaner index data/x -o idx/x --embedder precomputed --vectors vectors.npy
  gleaner index info idx/scifact`,
		Short: "Build an index from a gleaner JSONL corpus",
		Args:  exactArgs(1, "the corpus folder"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIndex(cmd, g, f, args[0])
		},
	}
	lsa, bm := lexical.DefaultLSA(), lexical.DefaultBM25()
	fl := cmd.Flags()
	fl.StringVarP(&f.out, "out", "o", "", "index folder to create (replaced atomically if it exists)")
	fl.StringVar(&f.embedder, "embedder", index.EmbedderLSA, "node vectors: lsa (fitted here) or precomputed (--vectors)")
	fl.StringVar(&f.vectors, "vectors", "", "precomputed node vectors: .npy (float32, rows in nodes.jsonl order) or .jsonl {id, vector}")
	fl.StringVar(&f.metric, "metric", index.MetricCosine, "vector similarity: cosine or dot")
	fl.StringVar(&f.biEncoder, "bi-encoder", "", "embed nodes with this transformer folder (tokenizer.json, config.json, model.safetensors) instead of LSA")
	fl.StringVar(&f.pooling, "pooling", "mean", "bi-encoder pooling: mean or cls")
	fl.StringVar(&f.tokenizer, "tokenizer", "", "tokenizer.json of a cross-encoder: tokenize node texts once now and store the ids, so reranking only tokenizes queries")
	fl.StringVar(&f.quantize, "quantize", "", "also store the vectors quantized, bf16 (half the bytes) or int8 (a quarter), which method vector scans and rescores exactly (see 'gleaner graph build --kind quantized')")
	fl.IntVar(&f.dims, "dims", lsa.Dims, "LSA dimensions")
	fl.Uint64Var(&f.seed, "seed", lsa.Seed, "LSA random seed")
	fl.IntVar(&f.lsaSample, "lsa-sample", lsa.SampleDocs, "fit LSA on a seeded sample of this many passages when the corpus has more (0: on every passage); every passage is still embedded")
	fl.Float64Var(&f.k1, "k1", bm.K1, "BM25 k1")
	fl.Float64Var(&f.b, "b", bm.B, "BM25 b")
	fl.BoolVar(&f.skip, "skip-invalid", false, "warn about and drop invalid records instead of failing (malformed JSON and repeated ids still fail)")
	fl.BoolVar(&f.trainHead, "train-head", true, "train the lexical cross-encoder's head on pseudo-queries (see 'gleaner train head')")
	cmd.AddCommand(newIndexInfo(), newIndexRefit(g), newIndexDetach(g))
	return cmd
}

func runIndex(cmd *cobra.Command, g *globals, f *indexFlags, dir string) error {
	if f.out == "" {
		return fmt.Errorf("-o <index-dir> is required")
	}
	if err := store.CheckTarget(f.out); err != nil { // before loading and building
		return fmt.Errorf("-o %s: %w", f.out, err)
	}
	quantize, err := quantizeStep(f.quantize)
	if err != nil {
		return err
	}
	c, err := corpus.Load(dir, corpus.ReadOptions{SkipInvalid: f.skip, Logger: g.log})
	if err != nil {
		return err
	}
	lsa := lexical.DefaultLSA()
	lsa.Dims, lsa.Seed, lsa.SampleDocs = f.dims, f.seed, f.lsaSample
	start := time.Now()
	embed := []index.Option{index.WithEmbedder(f.embedder), index.WithVectors(f.vectors)}
	if f.biEncoder != "" {
		bi, err := openBiEncoder(g, f.biEncoder, f.pooling)
		if err != nil {
			return err
		}
		embed = []index.Option{index.WithTextEmbedder(bi)}
	}
	opts := append(embed, index.WithMetric(f.metric),
		index.WithLSA(lsa), index.WithBM25(lexical.BM25Params{K1: f.k1, B: f.b}),
		index.WithLogger(g.log), index.WithProgress(progress.New(os.Stderr, g.log, 2*time.Second)),
		index.WithSource(dir))
	// Token ids and the head are added before the index takes -o's place,
	// so an interrupted build never replaces a working index with a partial one.
	if f.tokenizer != "" {
		opts = append(opts, index.WithFinish(func(ctx context.Context, staged string) error {
			if err := storeTokens(ctx, staged, f.tokenizer, g); err != nil {
				return fmt.Errorf("storing node tokens: %w", err)
			}
			return nil
		}))
	}
	if quantize != nil {
		opts = append(opts, index.WithFinish(func(ctx context.Context, staged string) error {
			_, err := retrieve.Build(ctx, retrieve.BuildEnv{Backend: g.be, Logger: g.log}, staged, quantize)
			return err
		}))
	}
	if f.trainHead {
		opts = append(opts, index.WithHead(index.DefaultHeadOptions())) // a failure is an error here
	} else {
		opts = append(opts, index.WithoutHead())
	}
	nodes, edges := len(c.Nodes), len(c.Edges) // c is not held past Build: its finish steps reopen the index
	if err := index.Build(cmd.Context(), c, f.out, opts...); err != nil {
		if errors.Is(err, headtrain.ErrTooFewGroups) {
			return fmt.Errorf("%w; --train-head=false builds the index without one (re2, gar and fastinsight need it)", err)
		}
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "indexed %d nodes, %d edges into %s in %v\n", nodes, edges, f.out, time.Since(start).Round(time.Millisecond))
	return nil
}

// quantizeStep is the build step --quantize asks for, checked before the
// build starts; nil for none.
func quantizeStep(kind string) (*retrieve.Config, error) {
	if kind == "" {
		return nil, nil
	}
	cfg, err := retrieve.NewBuildConfig(retrieve.SectionQuantized)
	if err != nil {
		return nil, err
	}
	if err := cfg.Set("quantize", kind); err != nil {
		return nil, fmt.Errorf("--quantize: %w", err)
	}
	return cfg, cfg.Validate()
}

func newIndexInfo() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "info <index-dir>",
		Short: "Print what an index holds, after verifying it",
		Args:  exactArgs(1, "the index folder"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ix, err := index.Open(args[0], store.OpenOptions{})
			if err != nil {
				return err
			}
			defer ix.Close()
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(ix.Manifest)
			}
			return printInfo(cmd, ix)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the manifest as JSON")
	return cmd
}

func printInfo(cmd *cobra.Command, ix *index.Index) error {
	m := ix.Meta
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "index\t%s (format %s v%d, created %s, checksums ok)\n", ix.Dir, ix.Manifest.Format, ix.Manifest.Version, ix.Manifest.Created)
	fmt.Fprintf(w, "source\t%s\n", m.Source)
	fmt.Fprintf(w, "nodes\t%d\n", m.Nodes)
	fmt.Fprintf(w, "edges\t%d (relations %d, graph kinds %v)\n", m.Edges, m.Relations, m.GraphKinds)
	fmt.Fprintf(w, "bm25\tk1=%v b=%v, %d terms, %d postings\n", m.BM25["k1"], m.BM25["b"], m.Terms, m.Postings)
	fmt.Fprintf(w, "vectors\t%d × %d, embedder %s, metric %s\n", m.Nodes, m.Dims, m.Embedder, m.Metric)
	if m.LSA != nil {
		fmt.Fprintf(w, "lsa\t%s\n", keyValues(m.LSA))
	}
	printLive(w, ix)
	if h := ix.HeadFile(); h != nil {
		fmt.Fprintf(w, "head\t%s\n", describeHead(h))
	} else {
		fmt.Fprintf(w, "head\tnone (re2, gar and fastinsight need one: gleaner train head)\n")
	}
	if _, hash, ok := ix.Tokens(0); ok {
		fmt.Fprintf(w, "tokens\tnode token ids stored for the tokenizer with sha256 %s\n", hash)
	}
	for _, st := range ix.Sections() {
		fmt.Fprintf(w, "section %s\t%s\n", st.Name, describeSection(st))
	}
	names := make([]string, 0, len(ix.Manifest.Files))
	var total int64
	for n, f := range ix.Manifest.Files {
		names = append(names, n)
		total += f.Bytes
	}
	sort.Strings(names)
	fmt.Fprintf(w, "files\t%d, %.1f MiB\n", len(names), float64(total)/(1<<20))
	for _, n := range names {
		f := ix.Manifest.Files[n]
		fmt.Fprintf(w, "  %s\t%s\t%d B\tcrc32c %08x\n", n, f.Kind, f.Bytes, f.CRC32C)
	}
	return w.Flush()
}

// openBiEncoder loads a transformer bi-encoder on the selected backend.
func openBiEncoder(g *globals, dir, pooling string) (*transformer.BiEncoder, error) {
	return transformer.LoadBiEncoder(dir, pooling, g.be)
}

// openIndex opens an index, attaching the bi-encoder its vectors came from
// when one is given.
func openIndex(g *globals, dir, biEncoder, pooling string) (*index.Index, error) {
	if biEncoder == "" {
		return index.Open(dir, store.OpenOptions{})
	}
	bi, err := openBiEncoder(g, biEncoder, pooling)
	if err != nil {
		return nil, err
	}
	return index.OpenWith(dir, store.OpenOptions{}, bi)
}

// keyValues prints a map as "a=1 b=2", keys sorted.
func keyValues(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, m[k])
	}
	return strings.Join(parts, " ")
}

// describeSection is one line of index info about a section.
func describeSection(st index.SectionStatus) string {
	what, state := st.Summary, "ok"
	if what == "" {
		what = "a section this program does not know"
	}
	if st.Err != nil {
		state = "unusable: " + st.Err.Error()
	}
	update := "rebuilt when the nodes change"
	if st.Record.Update == index.Incremental {
		update = "follows node changes"
	}
	files := "files"
	if len(st.Record.Files) == 1 {
		files = "file"
	}
	return fmt.Sprintf("%s, version %d, %s, %d %s, %.1f MiB: %s",
		what, st.Record.Version, update, len(st.Record.Files), files, float64(st.Bytes)/(1<<20), state)
}

// printLive describes the index's update log and what changes left stale.
func printLive(w io.Writer, ix *index.Index) {
	m := ix.Meta
	if m.Live != nil || wal.Exists(index.LogDir(ix.Dir)) {
		st := wal.Peek(index.LogDir(ix.Dir))
		line := fmt.Sprintf("%s: %d segments, %d B", index.LogDir(ix.Dir), st.Segments, st.Bytes)
		if m.Live != nil {
			line = fmt.Sprintf("includes log %s up to record %d; ", m.Live.Log, m.Live.Seq) + line
		}
		if st.Locked {
			line += " (open in a live writer: the index on disk lags until its next checkpoint)"
		}
		fmt.Fprintf(w, "live\t%s\n", line)
	}
	if s := m.Stale; s != nil && len(s.Sections)+len(s.GraphKinds) > 0 {
		how := "build them again (gleaner graph build, gleaner train)"
		if r := ix.Refreshable(); len(r) > 0 {
			how = fmt.Sprintf("gleaner refresh builds %s again (a server with --writes does it when writes pause); the others: gleaner graph build, gleaner train", strings.Join(r, ", "))
		}
		fmt.Fprintf(w, "stale\tsections %v, edge kinds %v: %d changes since they were built; %s\n", s.Sections, s.GraphKinds, s.Changes, how)
	}
}
