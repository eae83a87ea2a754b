package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/fuseattn"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/methods/fuserag"
	"github.com/gleaner-rag/gleaner/models/llama"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// answerFlags are answer's own settings.
type answerFlags struct {
	index, decoder, adapters, mode, evidenceEnc, biEncoder, pooling string
	tau, maxTokens, maxStates                                       int
	temperature                                                     float64
	seed                                                            uint64
	cacheMB                                                         int
	explain                                                         bool
	queries, out                                                    string
	limit, skip                                                     int
	warm                                                            bool
}

func newAnswer(g *globals) *cobra.Command {
	var f answerFlags
	var sf *settingFlags
	cmd := &cobra.Command{
		Use: "answer --index <dir> --decoder <dir> [--fuserag <adapters>] [--mode fuserag|text] <question...>",
		Example: `  gleaner model random --kind llama -o llm --corpus data/2wiki
  gleaner model random --kind fuserag -o adapters --decoder llm --index idx/2wiki
  gleaner answer --index idx/2wiki --graph-kind mentions --decoder llm --fuserag adapters --explain "Where was the director of Pearl Lust born?"
  gleaner answer --index idx/2wiki --graph-kind mentions --decoder llm --mode text "Where was the director of Pearl Lust born?"`,
		Short: "Answer a question with FuseRAG: greedy evidence, text anchors and latent memory into a decoder",
		Long: `Answer a question with FuseRAG (docs/methods.md §7), streaming the decoder's answer:
stage 1 retrieves the evidence set B_q by the greedy walk (method fuserag's --fuserag-* settings),
stage 2b picks text anchors within --tau decoder tokens by knapsack, stage 2a encodes the evidence
(token states cached across questions), pools it by the question and fuses it over the evidence
graph, and stage 3 projects that memory into the decoder's memory layers, where the text attends to
it under one softmax. --mode text is plain RAG with the same passages as prompt text.

The decoder is a Llama-family folder (config.json, model.safetensors, tokenizer.json); the
adapters folder (config.json, adapters.safetensors) holds FuseRAG's trained pooling, GAT and
memory projections. gleaner cannot train them (the paper's training objective is not published);
'gleaner model random' writes random ones of the right shapes, which measure speed, not answers.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !cmd.Flags().Changed("queries") {
				return fmt.Errorf("answer needs the question after the flags (or --queries <file>); usage: %s", cmd.UseLine())
			}
			if len(args) > 0 && cmd.Flags().Changed("queries") {
				return fmt.Errorf("give a question or --queries, not both")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
				return err
			}
			if f.queries != "" {
				mo, err := fuseragOptions(sf)
				if err != nil {
					return err
				}
				return runAnswerBatch(cmd, g, f, mo)
			}
			if strings.Contains(f.mode, ",") || f.warm || f.out != "" || f.limit != 0 || f.skip != 0 {
				return fmt.Errorf("a list of --mode values, --warm, --out, --limit and --skip apply with --queries")
			}
			mo, err := fuseragOptions(sf)
			if err != nil {
				return err
			}
			return runAnswer(cmd, g, f, mo, strings.Join(args, " "))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.index, "index", "", "index folder (with a graph: gleaner graph build)")
	fl.StringVar(&f.decoder, "decoder", "", "Llama-family decoder folder (config.json, model.safetensors, tokenizer.json)")
	fl.StringVar(&f.adapters, "fuserag", "", "FuseRAG adapters folder (config.json, adapters.safetensors); required in fuserag mode")
	fl.StringVar(&f.mode, "mode", fuseattn.ModeFuseRAG, "fuserag (anchors + latent memory) or text (the same passages as prompt text)")
	fl.IntVar(&f.tau, "tau", 64, "fuserag: τ, the anchors' size in decoder tokens")
	fl.IntVar(&f.maxTokens, "max-tokens", 64, "most tokens to generate")
	fl.Float64Var(&f.temperature, "temperature", 0, "0 decodes greedily; > 0 samples at this temperature")
	fl.Uint64Var(&f.seed, "seed", 1, "sampling seed")
	fl.StringVar(&f.evidenceEnc, "evidence-encoder", "", "bi-encoder folder for adapters trained on transformer token states (default: the index's LSA term vectors)")
	fl.IntVar(&f.maxStates, "max-states", 256, "lsa evidence encoder: most token states per passage")
	fl.IntVar(&f.cacheMB, "cache-mb", 256, "evidence token states kept across questions, in MiB (0: none)")
	fl.BoolVar(&f.explain, "explain", false, "print B_q, the anchors and the timings (on stderr)")
	fl.StringVar(&f.queries, "queries", "", "answer every question of a queries.jsonl: one JSON line per question and mode (--out), timing medians on stderr")
	fl.StringVar(&f.out, "out", "", "--queries: write the answers here (JSONL; default stdout); an existing file is refused")
	fl.IntVar(&f.limit, "limit", 0, "--queries: answer only the first N (0 = all; after --skip)")
	fl.IntVar(&f.skip, "skip", 0, "--queries: leave out the first N questions")
	fl.BoolVar(&f.warm, "warm", false, "--queries, fuserag: answer each question twice and report the second, with cached evidence states, as mode fuserag-warm")
	sf = addSettingFlags(fl, fuseragInfo(), "--method")
	fl.StringVar(&f.biEncoder, "bi-encoder", "", "the bi-encoder folder the index's vectors came from")
	fl.StringVar(&f.pooling, "pooling", "mean", "bi-encoder pooling: mean or cls")
	return cmd
}

// modes lists --mode's values.
func (f answerFlags) modes() []string { return splitList(f.mode) }

func (f answerFlags) check() error {
	modes := f.modes()
	for i, m := range modes {
		if slices.Contains(modes[:i], m) {
			return fmt.Errorf("--mode lists %s twice", m)
		}
	}
	fuse := slices.Contains(modes, fuseattn.ModeFuseRAG)
	for _, m := range modes {
		if m != fuseattn.ModeFuseRAG && m != fuseattn.ModeText {
			return fmt.Errorf("--mode %q: want fuserag, text, or both (fuserag,text)", m)
		}
	}
	switch {
	case f.index == "":
		return fmt.Errorf("--index is required")
	case f.decoder == "":
		return fmt.Errorf("--decoder is required")
	case len(modes) == 0:
		return fmt.Errorf("--mode is empty: want fuserag, text, or both (fuserag,text)")
	case fuse && f.adapters == "":
		return fmt.Errorf("--mode fuserag needs --fuserag <adapters folder> (gleaner model random --kind fuserag writes random ones)")
	case !fuse && f.adapters != "":
		return fmt.Errorf("--fuserag applies to --mode fuserag")
	case f.warm && !fuse:
		return fmt.Errorf("--warm applies to --mode fuserag")
	case f.warm && f.cacheMB == 0:
		return fmt.Errorf("--warm measures answers from cached evidence states: it needs --cache-mb > 0")
	case f.explain && f.queries != "":
		return fmt.Errorf("--explain is for one question; --queries writes each answer's timings to its JSON line")
	case f.limit < 0 || f.skip < 0:
		return fmt.Errorf("--limit and --skip must be ≥ 0, got %d and %d", f.limit, f.skip)
	case f.tau < 1 || f.tau > fuseattn.MaxAnchorBudget:
		return fmt.Errorf("--tau must be in [1, %d], got %d", fuseattn.MaxAnchorBudget, f.tau)
	case f.maxTokens < 1:
		return fmt.Errorf("--max-tokens must be ≥ 1, got %d", f.maxTokens)
	case !(f.temperature >= 0) || math.IsInf(f.temperature, 1):
		return fmt.Errorf("--temperature must be finite and ≥ 0, got %v", f.temperature)
	case f.cacheMB < 0 || f.cacheMB > 1<<20:
		return fmt.Errorf("--cache-mb must be in [0, %d], got %d", 1<<20, f.cacheMB)
	case f.maxStates < 1:
		return fmt.Errorf("--max-states must be ≥ 1, got %d", f.maxStates)
	}
	return nil
}

// answerSetup is everything an answer needs, loaded once.
type answerSetup struct {
	ix     *index.Index
	method fuserag.EvidenceMethod
	a      *fuseattn.Answerer
	zq     func(ctx context.Context, q string) ([]float32, error)
	close  func()
}

func loadAnswerSetup(g *globals, f answerFlags, mo fuserag.Options) (*answerSetup, error) {
	ix, err := openIndex(g, f.index, f.biEncoder, f.pooling)
	if err != nil {
		return nil, err
	}
	s := &answerSetup{ix: ix}
	var closers []func()
	s.close = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	closers = append(closers, func() { ix.Close() })
	fail := func(err error) (*answerSetup, error) { s.close(); return nil, err }
	m, err := fuserag.New(ix, retrieve.Env{Backend: g.be, Logger: g.log}, mo)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, func() { retrieve.CloseAll(context.Background(), m) })
	s.method = m
	dec, err := llama.Load(f.decoder, g.be)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, dec.Close)
	tok, err := llama.LoadTokenizer(f.decoder, dec.Cfg)
	if err != nil {
		return fail(err)
	}
	anchors := mo.Anchors
	anchors.Budget = f.tau
	s.a = &fuseattn.Answerer{Decoder: dec, Tok: tok, Anchors: anchors}
	if slices.Contains(f.modes(), fuseattn.ModeFuseRAG) {
		fu, zq, err := loadFuser(g, f, ix)
		if err != nil {
			return fail(err)
		}
		closers = append(closers, fu.Close)
		if err := fu.CheckDecoder(dec.Cfg); err != nil {
			return fail(fmt.Errorf("--fuserag %s and --decoder %s: %w", f.adapters, f.decoder, err))
		}
		s.a.Fuser, s.zq = fu, zq
	}
	return s, nil
}

// loadFuser opens the adapters with the evidence encoder they were made
// for, and returns how to embed a question into its space.
func loadFuser(g *globals, f answerFlags, ix *index.Index) (*fuseattn.Fuser, func(context.Context, string) ([]float32, error), error) {
	cfg, t, err := fuseattn.LoadAdapters(f.adapters)
	if err != nil {
		return nil, nil, err
	}
	cache := fuseattn.NewStateCache(int64(f.cacheMB) << 20)
	switch cfg.Encoder {
	case fuseattn.EncoderLSA:
		if f.evidenceEnc != "" {
			return nil, nil, fmt.Errorf("--evidence-encoder: the adapters in %s use the index's LSA states", f.adapters)
		}
		if ix.LSA == nil {
			return nil, nil, fmt.Errorf("the adapters in %s use LSA token states, and index %s has %s vectors: give adapters made for a transformer and --evidence-encoder", f.adapters, f.index, ix.Meta.Embedder)
		}
		if got := ix.LSAFingerprint(); cfg.EvidenceSource != "" && cfg.EvidenceSource != got {
			return nil, nil, fmt.Errorf("the adapters in %s were made for another LSA basis (%s) than index %s's (%s): make them for this index",
				f.adapters, cfg.EvidenceSource, f.index, got)
		}
		enc := &fuseattn.LSAStates{M: ix.LSA, Terms: ix.Postings.Terms, MaxTokens: f.maxStates}
		fu, err := fuseattn.NewFuser(cfg, t, g.be, enc, cache)
		return fu, ix.EmbedQuery, err
	default:
		if f.evidenceEnc == "" {
			return nil, nil, fmt.Errorf("the adapters in %s use transformer token states: give --evidence-encoder <bi-encoder folder>", f.adapters)
		}
		bi, err := openBiEncoder(g, f.evidenceEnc, f.pooling)
		if err != nil {
			return nil, nil, err
		}
		fu, err := fuseattn.NewFuser(cfg, t, g.be, bi, cache)
		return fu, func(ctx context.Context, q string) ([]float32, error) { return bi.Embed(ctx, []string{q}) }, err
	}
}

func runAnswer(cmd *cobra.Command, g *globals, f answerFlags, mo fuserag.Options, question string) error {
	s, err := loadAnswerSetup(g, f, mo)
	if err != nil {
		return err
	}
	defer s.close()
	ctx := cmd.Context()
	t0 := time.Now()
	ev, err := s.evidence(ctx, question, f.mode == fuseattn.ModeFuseRAG)
	if err != nil {
		return err
	}
	retrieval := time.Since(t0)
	out := cmd.OutOrStdout()
	var wrote bool
	var werr error
	res, err := s.a.Answer(ctx, question, ev, fuseattn.AnswerOptions{Mode: f.mode,
		Generate: llama.GenerateOptions{MaxTokens: f.maxTokens, Temperature: f.temperature, Seed: f.seed}},
		func(piece string) bool {
			if _, werr = fmt.Fprint(out, piece); werr != nil {
				return false // a full disk or a closed pipe ends the answer
			}
			wrote = true
			return true
		})
	if wrote && werr == nil {
		_, werr = fmt.Fprintln(out)
	}
	if err != nil {
		return err
	}
	if werr != nil {
		return fmt.Errorf("writing the answer: %w", werr)
	}
	if f.explain {
		explainAnswer(cmd.ErrOrStderr(), s.ix, ev, res, retrieval, f.mode)
	}
	return nil
}

// evidence runs stage 1 and gathers the passages (and, in fuserag mode,
// the question's vector in the evidence encoder's space).
func (s *answerSetup) evidence(ctx context.Context, question string, withZq bool) (*fuseattn.Evidence, error) {
	ev, err := s.method.Evidence(ctx, retrieve.Query{Text: question})
	if err != nil {
		return nil, err
	}
	if ev == nil || len(ev.Nodes) == 0 {
		return nil, fmt.Errorf("no evidence: no node of the index matches %q", question)
	}
	out := &fuseattn.Evidence{Nodes: ev.Nodes, Graph: ev.Graph}
	for _, v := range ev.Nodes {
		out.Passages = append(out.Passages, fuseattn.Passage{Title: s.ix.Title(int(v)), Text: s.ix.Text(int(v))})
	}
	if withZq {
		if out.Zq, err = s.zq(ctx, question); err != nil {
			return nil, fmt.Errorf("embedding the question: %w", err)
		}
	}
	return out, nil
}

// explainAnswer prints B_q, the anchors and the timings.
func explainAnswer(w io.Writer, ix *index.Index, ev *fuseattn.Evidence, res *fuseattn.AnswerResult, retrieval time.Duration, mode string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "B_q (%d nodes, %d edges in G_q)\n", len(ev.Nodes), edgeCount(ev.Graph))
	fmt.Fprintln(tw, "#\tid\ttitle")
	for i, v := range ev.Nodes {
		fmt.Fprintf(tw, "%d\t%s\t%s\n", i+1, ix.NodeID(int(v)), ix.Title(int(v)))
	}
	tw.Flush()
	if a := res.Anchors; a != nil {
		fmt.Fprintf(w, "anchors S_q: %d of %d clauses, %d tokens, score %.2f\n", len(a.Chosen), a.Candidates, a.Tokens, a.Score)
		for _, c := range a.Chosen {
			fmt.Fprintf(w, "  [%.2f, %d tok] %s\n", c.Score, c.Tokens, c.Text)
		}
	}
	m, st := res.Memory, res.Gen
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
	fmt.Fprintf(w, "timings (%s mode): retrieval %s; prompt %s", mode, ms(retrieval), ms(res.Build))
	if mode == fuseattn.ModeFuseRAG {
		fmt.Fprintf(w, "; encoding %s (%d cached, %d encoded); pooling+GAT %s; projection %s (%d memory rows)",
			ms(m.Encode), m.Cached, m.Encoded, ms(m.PoolGAT), ms(m.Project), m.Rows)
	}
	fmt.Fprintf(w, "; prefill %s (%d tokens); first token %s; TTFT %s (+ retrieval %s)",
		ms(st.Prefill), st.PromptTokens, ms(st.FirstToken), ms(res.TTFT), ms(res.TTFT+retrieval))
	if st.Tokens > 1 {
		fmt.Fprintf(w, "; decode %.1f tokens/s", float64(st.Tokens-1)/st.Decode.Seconds())
	}
	fmt.Fprintln(w)
}

func edgeCount(g *graphops.Subgraph) int {
	if g == nil {
		return 0
	}
	return len(g.Idx) / 2
}

// fuseragInfo describes method fuserag, whose settings answer takes.
func fuseragInfo() []retrieve.Info {
	for _, in := range retrieve.Methods() {
		if in.Name == fuseragName {
			return []retrieve.Info{in}
		}
	}
	return nil
}

// fuseragName is the method answer retrieves with (FuseRAG's retrieval).
const fuseragName = "fuserag"

// fuseragOptions are fuserag's options with the flags given.
func fuseragOptions(sf *settingFlags) (fuserag.Options, error) {
	cfgs, err := sf.configs(retrieve.NewConfig, []string{fuseragName})
	if err != nil {
		return fuserag.Options{}, err
	}
	return *cfgs[0].Value().(*fuserag.Options), nil
}
