package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/fuseattn"
	"github.com/gleaner-rag/gleaner/methods/fuserag"
	"github.com/gleaner-rag/gleaner/models/llama"
)

// answerRow is one question answered in one mode (the JSONL --queries
// writes), with its stage timings in milliseconds.
type answerRow struct {
	ID           string   `json:"id"`
	Question     string   `json:"question"`
	Mode         string   `json:"mode"`
	Answer       string   `json:"answer"`
	Evidence     []string `json:"evidence"`
	PromptTokens int      `json:"prompt_tokens"`
	MemoryRows   int      `json:"memory_rows,omitempty"`
	Cached       int      `json:"cached_nodes,omitempty"`
	Encoded      int      `json:"encoded_nodes,omitempty"`
	RetrievalMS  float64  `json:"retrieval_ms"`
	PromptMS     float64  `json:"prompt_ms"`
	EncodeMS     float64  `json:"encode_ms"`
	PoolGATMS    float64  `json:"pool_gat_ms"`
	ProjectMS    float64  `json:"project_ms"`
	PrefillMS    float64  `json:"prefill_ms"`
	FirstTokenMS float64  `json:"first_token_ms"`
	TTFTMS       float64  `json:"ttft_ms"`
	Error        string   `json:"error,omitempty"`
}

func millis(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// runAnswerBatch answers every question of --queries in every --mode, the
// same evidence for each mode, and prints timing medians.
func runAnswerBatch(cmd *cobra.Command, g *globals, f answerFlags, mo fuserag.Options) error {
	qs, err := corpus.ReadQueries(f.queries, nil, corpus.ReadOptions{Logger: g.log})
	if err != nil {
		return err
	}
	qs = qs[min(f.skip, len(qs)):]
	if f.limit > 0 {
		qs = qs[:min(f.limit, len(qs))]
	}
	if len(qs) == 0 {
		return fmt.Errorf("%s: no questions left after --skip %d", f.queries, f.skip)
	}
	w, done, err := answerOutput(cmd, f.out)
	if err != nil {
		return err
	}
	s, err := loadAnswerSetup(g, f, mo)
	if err != nil {
		done(false)
		return err
	}
	defer s.close()
	enc := json.NewEncoder(w)
	var rows []answerRow
	failed := 0
	for i, q := range qs {
		if err := cmd.Context().Err(); err != nil {
			done(true) // keep what was answered
			return err
		}
		qrows, err := s.answerAll(cmd, q, f)
		if err != nil && cmd.Context().Err() != nil { // interrupted: not a failure of this question
			done(true) // keep what was answered
			if len(rows) > 0 {
				printAnswerSummary(cmd.ErrOrStderr(), rows)
			}
			return fmt.Errorf("interrupted after %d of %d questions (their answers are kept): %w", i, len(qs), cmd.Context().Err())
		}
		if err != nil { // recorded, and the batch goes on
			failed++
			g.log.Warn("answer failed", "question", f.skip+i+1, "id", q.ID, "err", err)
			qrows = []answerRow{{ID: q.ID, Question: q.Text, Mode: f.mode, Error: err.Error()}}
		}
		for _, r := range qrows {
			if err := enc.Encode(r); err != nil {
				done(false)
				return err
			}
		}
		if err == nil {
			rows = append(rows, qrows...)
		}
		g.log.Info("answered", "question", i+1, "of", len(qs), "id", q.ID)
	}
	if err := done(true); err != nil {
		return err
	}
	if len(rows) > 0 {
		printAnswerSummary(cmd.ErrOrStderr(), rows)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d questions failed (their lines carry the error)", failed, len(qs))
	}
	return nil
}

// answerOutput opens --out (refusing to overwrite) or stdout; done(true)
// completes the file, done(false) removes it.
func answerOutput(cmd *cobra.Command, path string) (io.Writer, func(bool) error, error) {
	if path == "" {
		return cmd.OutOrStdout(), func(bool) error { return nil }, nil
	}
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("--out: %w (answers are never written over an existing file)", err)
	}
	return fh, func(ok bool) error {
		err := fh.Close()
		if !ok {
			os.Remove(path)
			return err
		}
		return err
	}, nil
}

// answerAll answers q in each mode from one retrieval.
func (s *answerSetup) answerAll(cmd *cobra.Command, q corpus.Query, f answerFlags) ([]answerRow, error) {
	ctx := cmd.Context()
	t0 := time.Now()
	ev, err := s.evidence(ctx, q.Text, slices.Contains(f.modes(), fuseattn.ModeFuseRAG))
	if err != nil {
		return nil, err
	}
	retrieval := time.Since(t0)
	var ids []string
	for _, v := range ev.Nodes {
		ids = append(ids, s.ix.NodeID(int(v)))
	}
	var out []answerRow
	runs := f.modes()
	if f.warm {
		runs = append(runs, "fuserag-warm")
	}
	for _, mode := range runs {
		m := mode
		if mode == "fuserag-warm" {
			m = fuseattn.ModeFuseRAG
		}
		res, err := s.a.Answer(ctx, q.Text, ev, fuseattn.AnswerOptions{Mode: m,
			Generate: llama.GenerateOptions{MaxTokens: f.maxTokens, Temperature: f.temperature, Seed: f.seed}}, func(string) bool { return true })
		if err != nil {
			return nil, fmt.Errorf("%s mode: %w", mode, err)
		}
		out = append(out, answerRow{ID: q.ID, Question: q.Text, Mode: mode, Answer: res.Text, Evidence: ids,
			PromptTokens: res.Gen.PromptTokens, MemoryRows: res.Memory.Rows, Cached: res.Memory.Cached, Encoded: res.Memory.Encoded,
			RetrievalMS: millis(retrieval), PromptMS: millis(res.Build), EncodeMS: millis(res.Memory.Encode), PoolGATMS: millis(res.Memory.PoolGAT),
			ProjectMS: millis(res.Memory.Project), PrefillMS: millis(res.Gen.Prefill), FirstTokenMS: millis(res.Gen.FirstToken), TTFTMS: millis(res.TTFT)})
	}
	return out, nil
}

// printAnswerSummary prints each mode's median stage timings.
func printAnswerSummary(w io.Writer, rows []answerRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tquestions\tprompt tokens\tmemory rows\tretrieval ms\tprompt ms\tencode ms\tpool+GAT ms\tprojection ms\tprefill ms\tfirst token ms\tTTFT ms\tTTFT+retrieval ms\t")
	var modes []string
	for _, r := range rows {
		if !slices.Contains(modes, r.Mode) {
			modes = append(modes, r.Mode)
		}
	}
	for _, m := range modes {
		var sel []answerRow
		for _, r := range rows {
			if r.Mode == m {
				sel = append(sel, r)
			}
		}
		med := func(get func(answerRow) float64) float64 {
			v := make([]float64, len(sel))
			for i, r := range sel {
				v[i] = get(r)
			}
			slices.Sort(v)
			if len(v)%2 == 1 {
				return v[len(v)/2]
			}
			return (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", m, len(sel),
			med(func(r answerRow) float64 { return float64(r.PromptTokens) }), med(func(r answerRow) float64 { return float64(r.MemoryRows) }),
			med(func(r answerRow) float64 { return r.RetrievalMS }), med(func(r answerRow) float64 { return r.PromptMS }),
			med(func(r answerRow) float64 { return r.EncodeMS }), med(func(r answerRow) float64 { return r.PoolGATMS }),
			med(func(r answerRow) float64 { return r.ProjectMS }), med(func(r answerRow) float64 { return r.PrefillMS }),
			med(func(r answerRow) float64 { return r.FirstTokenMS }), med(func(r answerRow) float64 { return r.TTFTMS }),
			med(func(r answerRow) float64 { return r.TTFTMS + r.RetrievalMS }))
	}
	tw.Flush()
	fmt.Fprintln(w, "medians over the questions; TTFT runs from the evidence to the first token (prompt, memory, prefill, first token)")
}
