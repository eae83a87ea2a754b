package ketrag

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models/kgextract"
	"github.com/gleaner-rag/gleaner/models/tiktoken"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// ReportOptions configure the report: the β shares of the cost table.
type ReportOptions struct {
	Betas []float64
}

// Params binds the report's settings.
func (o *ReportOptions) Params(p *retrieve.Params) {
	retrieve.Bind(p, &o.Betas, "betas", "ketrag: the β shares of the extraction cost table (comma-separated, each in (0,1], none twice)",
		formatBetas, parseBetas)
}

func init() {
	retrieve.Must(retrieve.RegisterReport(retrieve.ReportDef[ReportOptions]{Name: Section,
		Summary:  "KET-RAG's structures and the LLM extraction cost at each β",
		Defaults: func() ReportOptions { return ReportOptions{Betas: []float64{0.2, 0.5, 0.8, 1}} },
		Params:   (*ReportOptions).Params, Run: report}))
}

func formatBetas(bs []float64) string {
	var out []byte
	for i, b := range bs {
		if i > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendFloat(out, b, 'g', -1, 64)
	}
	return string(out)
}

// parseBetas reads at least one share in (0, 1], none twice.
func parseBetas(list string) ([]float64, error) {
	var out []float64
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		b, err := strconv.ParseFloat(s, 64)
		switch {
		case s == "":
			return nil, errors.New("an empty item")
		case err != nil || !(b > 0 && b <= 1):
			return nil, fmt.Errorf("%q is not a share in (0, 1]", s)
		case slices.Contains(out, b):
			return nil, fmt.Errorf("%s is listed twice", s)
		}
		out = append(out, b)
	}
	return out, nil
}

// report prints the KET-RAG structures and the extraction cost model at
// each β.
func report(_ context.Context, env retrieve.ReportEnv, ix *index.Index, o ReportOptions) error {
	k, err := Of(ix)
	if err != nil {
		return err
	}
	w := env.Out
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
		m.UnitTokens, prompt, ChatOverheadTokens, src)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "β\tcore chunks\tcalls\tinput tokens\toutput tokens\tvs β=1 input\t")
	rows := k.Costs(o.Betas, prompt)
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
