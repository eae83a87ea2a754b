package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/progress"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/kgextract"
	"github.com/gleaner-rag/gleaner/models/ner"
	"github.com/gleaner-rag/gleaner/models/tiktoken"
)

// ketragFlags are the settings of `graph build --kind ketrag`.
type ketragFlags struct {
	o         index.KETRAGOptions
	extractor string
	llm       kgextract.LLMOptions
	keyEnv    string
}

// ketragOnly names the flags only --kind ketrag reads (--workers, --ner,
// --k-lex, --k-sem, --bi-encoder and --pooling are shared).
var ketragOnly = []string{"beta", "selection", "seed", "pr-damping", "unit-tokens", "piece-tokens", "max-descriptions", "extractor",
	"llm-url", "llm-model", "llm-key-env", "llm-cache", "llm-concurrency", "llm-timeout", "llm-retries", "llm-max-tokens"}

func (f *ketragFlags) add(fl *pflag.FlagSet) {
	f.o = index.DefaultKETRAGOptions()
	f.llm = kgextract.DefaultLLMOptions()
	fl.Float64Var(&f.o.Beta, "beta", f.o.Beta, "ketrag: β, the share of chunks the skeleton is extracted from, in (0,1]")
	fl.StringVar(&f.o.Selection, "selection", f.o.Selection, "ketrag: core chunks by pagerank (KET-RAG-P) or uniform (KET-RAG-U)")
	fl.Int64Var(&f.o.Seed, "seed", f.o.Seed, "ketrag: seed of --selection uniform")
	fl.Float64Var(&f.o.Damping, "pr-damping", f.o.Damping, "ketrag: PageRank's α over the chunk graph, in (0,1)")
	fl.IntVar(&f.o.UnitTokens, "unit-tokens", f.o.UnitTokens, "ketrag: tokens per extraction unit (consecutive core chunks merged)")
	fl.IntVar(&f.o.PieceTokens, "piece-tokens", f.o.PieceTokens, "ketrag: tokens per text unit the skeleton channel quotes")
	fl.IntVar(&f.o.MaxDescriptions, "max-descriptions", f.o.MaxDescriptions, "ketrag: distinct descriptions a merged entity or relationship keeps")
	fl.StringVar(&f.extractor, "extractor", "local", "ketrag: local (prose NER, sentence co-occurrence; no network) or llm (an OpenAI-compatible server)")
	fl.StringVar(&f.llm.BaseURL, "llm-url", "", "ketrag llm: the API root, e.g. http://localhost:8000/v1 (vLLM), http://localhost:11434/v1 (Ollama)")
	fl.StringVar(&f.llm.Model, "llm-model", "", "ketrag llm: model name")
	fl.StringVar(&f.keyEnv, "llm-key-env", "OPENAI_API_KEY", "ketrag llm: environment variable holding the API key (unset or empty: no key)")
	fl.StringVar(&f.llm.CacheDir, "llm-cache", "", "ketrag llm: reply cache folder, so an interrupted build resumes without paying twice (default: <index>.llm-cache)")
	fl.IntVar(&f.llm.Concurrency, "llm-concurrency", f.llm.Concurrency, "ketrag llm: requests in flight")
	fl.DurationVar(&f.llm.Timeout, "llm-timeout", f.llm.Timeout, "ketrag llm: timeout of one request")
	fl.IntVar(&f.llm.MaxRetries, "llm-retries", f.llm.MaxRetries, "ketrag llm: retries after a 429, 5xx, timeout or invalid reply")
	fl.IntVar(&f.llm.MaxOutputTokens, "llm-max-tokens", f.llm.MaxOutputTokens, "ketrag llm: max_tokens of a reply")
}

func runKETRAG(cmd *cobra.Command, g *globals, dir string, f *ketragFlags, nerName, biEncoder, pooling string, workers int, start time.Time) error {
	if f.extractor == "llm" && !cmd.Flags().Changed("workers") {
		workers = f.llm.Concurrency // each worker holds one request: as many as may be in flight
	}
	if err := f.check(cmd.Flags(), workers); err != nil {
		return err
	}
	ex, err := f.extractorFor(cmd.Flags(), g, dir, nerName)
	if err != nil {
		return err
	}
	var e models.Embedder
	if biEncoder != "" {
		bi, err := openBiEncoder(g, biEncoder, pooling)
		if err != nil {
			return err
		}
		e = bi
	}
	f.o.Extractor, f.o.Workers = ex, workers
	f.o.Logger, f.o.Progress = g.log, progress.New(os.Stderr, g.log, 2*time.Second)
	m, err := index.SetKETRAG(cmd.Context(), dir, e, f.o)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "ketrag (%s): %d of %d chunks in the skeleton (%s, β %.2f) as %d units; %d entities, %d relationships, %d text units; %d keywords (%d keyword–chunk edges); stored in %s in %v\n",
		m.Extractor, m.Core, m.Chunks, m.Selection, m.Beta, m.Units, m.Entities, m.Relationships, m.Pieces, m.Keywords, m.KeywordEdges, dir, time.Since(start).Round(time.Millisecond))
	if u := m.Usage; u.Calls+u.CacheHits > 0 {
		fmt.Fprintf(cmd.OutOrStdout(), "llm: %d calls (%d retries), %d input and %d output tokens; %d replies from the cache (%d and %d tokens)\n",
			u.Calls, u.Retries, u.InputTokens, u.OutputTokens, u.CacheHits, u.CachedInput, u.CachedOutput)
	}
	return nil
}

// check names the flag a bad setting came from, before any work.
func (f *ketragFlags) check(fl *pflag.FlagSet, workers int) error {
	o := f.o
	switch {
	case !(o.Beta > 0 && o.Beta <= 1):
		return fmt.Errorf("--beta must be in (0, 1], got %v", o.Beta)
	case o.Selection != index.SelectPageRank && o.Selection != index.SelectUniform:
		return fmt.Errorf("--selection must be pagerank or uniform, got %q", o.Selection)
	case o.Selection == index.SelectPageRank && fl.Changed("seed"):
		return fmt.Errorf("--seed applies to --selection uniform (pagerank's selection is deterministic)")
	case !(o.Damping > 0 && o.Damping < 1):
		return fmt.Errorf("--pr-damping must be in (0, 1), got %v", o.Damping)
	case o.UnitTokens < 1:
		return fmt.Errorf("--unit-tokens must be ≥ 1, got %d", o.UnitTokens)
	case o.PieceTokens < 1:
		return fmt.Errorf("--piece-tokens must be ≥ 1, got %d", o.PieceTokens)
	case o.MaxDescriptions < 1:
		return fmt.Errorf("--max-descriptions must be ≥ 1, got %d", o.MaxDescriptions)
	case workers < 1:
		return fmt.Errorf("--workers must be ≥ 1, got %d", workers)
	case o.KNN.Lexical < 0 || o.KNN.Semantic < 0 || o.KNN.Lexical+o.KNN.Semantic == 0:
		return fmt.Errorf("--k-lex and --k-sem must be ≥ 0 and not both 0, got %d and %d", o.KNN.Lexical, o.KNN.Semantic)
	}
	return nil
}

// extractorFor builds the --extractor, refusing llm flags for local.
func (f *ketragFlags) extractorFor(fl *pflag.FlagSet, g *globals, dir, nerName string) (kgextract.Extractor, error) {
	switch f.extractor {
	case "local":
		for _, n := range ketragOnly {
			if strings.HasPrefix(n, "llm-") && fl.Changed(n) {
				return nil, fmt.Errorf("--%s applies to --extractor llm", n)
			}
		}
		if !fl.Changed("ner") {
			nerName = "prose" // chunks have no titles to match
		}
		titles, err := gazetteerTitles(dir, nerName)
		if err != nil {
			return nil, err
		}
		ex, err := ner.New(nerName, titles)
		if err != nil {
			return nil, fmt.Errorf("--ner: %w", err)
		}
		return kgextract.NewLocal(ex)
	case "llm":
		if fl.Changed("ner") {
			return nil, fmt.Errorf("--ner applies to --extractor local")
		}
		o := f.llm
		o.APIKey, o.Logger = os.Getenv(f.keyEnv), g.log
		if o.CacheDir == "" {
			o.CacheDir = strings.TrimSuffix(dir, string(os.PathSeparator)) + ".llm-cache"
		}
		if tok, err := tiktoken.CL100K(); err == nil {
			o.Count = tok.Count // servers that report no usage
		}
		return kgextract.NewLLM(o)
	}
	return nil, fmt.Errorf("--extractor %q: want local or llm", f.extractor)
}

// printKETRAGStats prints the KET-RAG structures and the extraction cost
// model at each β.
func printKETRAGStats(w io.Writer, ix *index.Index, betas []float64) error {
	k := ix.KETRAG
	m := k.Meta
	fmt.Fprintf(w, "ketrag (%s, %s β %.2f): %d chunks (%d tokens), chunk graph %d edges; skeleton from %d core chunks in %d units (%d tokens): %d entities, %d relationships, %d text units; %d keywords, %d keyword–chunk edges, %d sentence parts; built in %.1f s\n",
		m.Extractor, m.Selection, m.Beta, ix.N(), sum32(k.NodeTokens), m.ChunkGraphEdges, m.Core, m.Units, m.UnitTextTokens,
		m.Entities, m.Relationships, m.Pieces, m.Keywords, m.KeywordEdges, m.SentenceParts, m.BuildSeconds)
	tok, err := tiktoken.CL100K()
	if err != nil {
		return err
	}
	prompt := kgextract.PromptTokens(tok.Count)
	src := "- : no LLM extracted this skeleton, so no reply was measured"
	if m.Usage.Calls+m.Usage.CacheHits > 0 {
		src = "output scaled from the LLM's accounted replies"
	}
	fmt.Fprintf(w, "\nLLM extraction cost by β (one call per ≤ %d-token unit; prompt %d tokens + %d chat overhead per call; %s; β = 1 is GraphRAG extracting every chunk):\n",
		m.UnitTokens, prompt, index.ChatOverheadTokens, src)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "β\tcore chunks\tcalls\tinput tokens\toutput tokens\tvs β=1 input\t")
	rows := k.Costs(betas, prompt)
	full := k.Costs([]float64{1}, prompt)[0]
	for _, r := range rows {
		out := "-"
		if r.OutputTokens >= 0 {
			out = strconv.Itoa(r.OutputTokens)
		}
		fmt.Fprintf(tw, "%.2f\t%d\t%d\t%d\t%s\t%.2f\t\n", r.Beta, r.Core, r.Calls, r.InputTokens, out, float64(r.InputTokens)/float64(full.InputTokens))
	}
	return tw.Flush()
}

func sum32(v []int32) int {
	n := 0
	for _, x := range v {
		n += int(x)
	}
	return n
}

// parseBetas reads --betas: at least one share in (0, 1], none twice.
func parseBetas(list string) ([]float64, error) {
	items, err := strictList("--betas", list)
	if err != nil {
		return nil, err
	}
	var out []float64
	for _, s := range items {
		b, err := strconv.ParseFloat(s, 64)
		if err != nil || !(b > 0 && b <= 1) {
			return nil, fmt.Errorf("--betas: %q is not a share in (0, 1]", s)
		}
		out = append(out, b)
	}
	return out, nil
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
