package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
)

// Latency summarises per-query processing times in milliseconds.
type Latency struct {
	Median float64 `json:"median_ms"`
	P95    float64 `json:"p95_ms"`
	Mean   float64 `json:"mean_ms"`
}

// Summarize computes Latency from times in milliseconds.
func Summarize(ms []float64) Latency {
	if len(ms) == 0 {
		return Latency{}
	}
	s := append([]float64(nil), ms...)
	sort.Float64s(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	return Latency{Median: quantile(s, 0.5), P95: quantile(s, 0.95), Mean: sum / float64(len(s))}
}

// quantile interpolates linearly between order statistics.
func quantile(sorted []float64, p float64) float64 {
	pos := p * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo])
}

// MethodReport is one method's evaluation.
type MethodReport struct {
	Method    string             `json:"method"`
	Metrics   map[string]float64 `json:"metrics"`
	Evaluated int                `json:"evaluated"`
	Skipped   int                `json:"skipped_no_relevant"`
	Latency   Latency            `json:"latency"`
	// QPS is queries per second over the whole run, at the report's
	// concurrency.
	QPS float64 `json:"qps"`
	// EncoderPairs is the mean number of (query, node) pairs the method's
	// cross-encoder computed per query (reranking methods only).
	EncoderPairs float64                       `json:"encoder_pairs_per_query,omitempty"`
	RunFile      string                        `json:"run_file,omitempty"`
	PerQuery     map[string]map[string]float64 `json:"per_query"`
}

// Report is a whole evaluation, as written by `gleaner eval --report`.
type Report struct {
	Created     string `json:"created"`
	Index       string `json:"index"`
	Queries     string `json:"queries"`
	K           int    `json:"k"`
	Cutoffs     []int  `json:"cutoffs"`
	Depth       int    `json:"depth"`
	GroupBy     string `json:"group_by,omitempty"`
	Concurrency int    `json:"concurrency"`
	Topological bool   `json:"topological"`
	// Gold and Answers say whether the queries carry gold nodes (rank
	// metrics) and gold answers (answer_recall).
	Gold    bool `json:"gold"`
	Answers bool `json:"answers"`
	// ContextBudgets are the context sizes scored (Options.ContextBudgets).
	ContextBudgets []int          `json:"context_budgets,omitempty"`
	Methods        []MethodReport `json:"methods"`
}

// WriteJSON writes the report to path atomically.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// WriteTable prints one row per method with the metrics at cut-off K and
// the latency.
func (r *Report) WriteTable(w io.Writer) error {
	return r.WriteColumns(w, nil)
}

// WriteColumns is WriteTable with the given metric columns (full names such
// as "recall@5"); nil means the default columns at cut-off K.
func (r *Report) WriteColumns(w io.Writer, names []string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"method"}
	for _, n := range r.columns(names) {
		head = append(head, n)
	}
	head = append(head, "p50 ms", "p95 ms", "q/s", "queries")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, m := range r.Methods {
		row := []string{m.Method}
		for _, c := range r.columns(names) {
			if v, ok := m.Metrics[c]; ok {
				row = append(row, fmt.Sprintf("%.4f", v))
			} else {
				row = append(row, "-") // not computed: no gold of that kind, or no edges for TR
			}
		}
		if m.QPS == 0 && m.Latency == (Latency{}) { // a scored run file: no timing
			row = append(row, "-", "-", "-", fmt.Sprint(m.Evaluated))
		} else {
			row = append(row, fmt.Sprintf("%.3f", m.Latency.Median), fmt.Sprintf("%.3f", m.Latency.P95), fmt.Sprintf("%.0f", m.QPS), fmt.Sprint(m.Evaluated))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

// columns are the metric names a table shows.
func (r *Report) columns(names []string) []string {
	if names != nil {
		return names
	}
	var cols []string
	if r.Gold || !r.Answers {
		cols = append(cols, RecallCap, Recall, NDCG, Hit, MRR)
		if r.Topological {
			cols = append(cols, TR, MissTR)
		}
	}
	if r.Answers {
		cols = append(cols, AnswerRecall)
	}
	for i, c := range cols {
		cols[i] = Name(c, r.K)
	}
	if r.Answers {
		for _, b := range r.ContextBudgets {
			cols = append(cols, Name(ContextAnswerRecall, b), Name(ContextTokens, b))
		}
	}
	return cols
}
