// Package eval scores rankings against relevance judgements: capped
// Recall@k (BEIR), Recall@k, nDCG@k, Hit@k, MRR@k and FastInsight's
// Topological Recall with its MissTR part; it reads and writes TREC run
// files and writes JSON reports.
//
// Conventions (those of trec_eval / pytrec_eval unless said otherwise):
//   - a document is relevant when its grade is > 0; nDCG gains are the
//     grades themselves (trec_eval's ndcg_cut), discounted by log2(rank+1);
//   - a query with no relevant document is skipped (not averaged), as
//     BEIR's evaluation does; a judged query missing from a run scores 0;
//   - a ranking is scored in the order given; a repeated document counts
//     at its first position only. TREC run files are ordered by score
//     descending, ties by document id descending, as trec_eval does.
package eval

import (
	"fmt"
	"math"
	"sort"

	"github.com/gleaner-rag/gleaner/engine"
)

// Metric names; a cut-off is appended as "@k".
const (
	NDCG      = "ndcg"
	Recall    = "recall"
	RecallCap = "recall_cap"
	Hit       = "hit"
	MRR       = "mrr"
	TR        = "tr"
	MissTR    = "misstr"
)

// Name formats a metric at a cut-off, e.g. Name(NDCG, 10) = "ndcg@10".
func Name(metric string, k int) string { return fmt.Sprintf("%s@%d", metric, k) }

// Judgements maps document id to grade.
type Judgements map[string]int

// relevant counts documents with grade > 0.
func (j Judgements) relevant() int {
	n := 0
	for _, g := range j {
		if g > 0 {
			n++
		}
	}
	return n
}

// dedup keeps the first occurrence of each document.
func dedup(ranking []string) []string {
	seen := make(map[string]bool, len(ranking))
	out := ranking[:0:0]
	for _, d := range ranking {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// Score computes the rank-based metrics of one ranking at each cut-off. It
// returns ok=false when the query has no relevant document.
func Score(ranking []string, j Judgements, cutoffs []int) (map[string]float64, bool) {
	nrel := j.relevant()
	if nrel == 0 {
		return nil, false
	}
	ranking = dedup(ranking)
	ideal := idealGains(j)
	out := make(map[string]float64, 5*len(cutoffs))
	for _, k := range cutoffs {
		top := ranking[:min(k, len(ranking))]
		hits, dcg, first := 0, 0.0, 0
		for i, d := range top {
			if g := j[d]; g > 0 {
				hits++
				dcg += float64(g) / math.Log2(float64(i+2))
				if first == 0 {
					first = i + 1
				}
			}
		}
		out[Name(NDCG, k)] = dcg / idcg(ideal, k)
		out[Name(Recall, k)] = float64(hits) / float64(nrel)
		out[Name(RecallCap, k)] = float64(hits) / float64(min(k, nrel))
		out[Name(Hit, k)] = b2f(hits > 0)
		out[Name(MRR, k)] = 0
		if first > 0 {
			out[Name(MRR, k)] = 1 / float64(first)
		}
	}
	return out, true
}

func idealGains(j Judgements) []float64 {
	var g []float64
	for _, v := range j {
		if v > 0 {
			g = append(g, float64(v))
		}
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(g)))
	return g
}

func idcg(ideal []float64, k int) float64 {
	s := 0.0
	for i := 0; i < min(k, len(ideal)); i++ {
		s += ideal[i] / math.Log2(float64(i+2))
	}
	return s
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Overlap is the share of want's nodes that got also holds: how well an
// approximate ranking (local push) keeps an exact one's top k. Empty want
// overlaps fully.
func Overlap(got, want []engine.Hit) float64 {
	if len(want) == 0 {
		return 1
	}
	in := make(map[int32]bool, len(got))
	for _, h := range got {
		in[h.Index] = true
	}
	n := 0
	for _, h := range want {
		if in[h.Index] {
			n++
		}
	}
	return float64(n) / float64(len(want))
}
