package trigraph

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/retrieve"
)

func init() {
	retrieve.Must(retrieve.RegisterReport(retrieve.ReportDef[retrieve.NoOptions]{Name: Section,
		Summary:  "the Tri-Graph's entity statistics; with queries, how question entities reach the gold passages (nexusrag's settings)",
		Defaults: func() retrieve.NoOptions { return retrieve.NoOptions{} }, Params: (*retrieve.NoOptions).Params, Run: report}))
}

// report prints the Tri-Graph's entity statistics and, with queries, how
// well question entities reach the gold passages: the figures that
// explain nexusrag's recall.
func report(ctx context.Context, env retrieve.ReportEnv, ix *index.Index, _ retrieve.NoOptions) error {
	tg, err := Of(ix)
	if err != nil {
		return err
	}
	w := env.Out
	m := tg.Meta
	noEnt := 0
	for p := 0; p < tg.Passages; p++ {
		if tg.PassEnts.Ptr[p+1] == tg.PassEnts.Ptr[p] {
			noEnt++
		}
	}
	fmt.Fprintf(w, "tri-graph (ner %s): %d entities, %d sentences, %d passage–entity mentions (%.2f per passage; %.1f%% of passages without an entity)\n",
		m.NER, m.Entities, m.Sentences, m.Mentions, float64(m.Mentions)/float64(tg.Passages), 100*float64(noEnt)/float64(tg.Passages))
	fmt.Fprintf(w, "neighbour matrix W (τ %.2f, κ %d): %.2f neighbours per entity, %.1f%% of entities with none\n",
		m.Neighbours.Threshold, m.Neighbours.Kappa, m.MeanNeighbours, 100*m.ZeroNeighbours)
	if len(env.Queries) == 0 {
		return nil
	}
	cfg, err := env.Method("nexusrag")
	if err != nil {
		return err
	}
	mt, err := NewNexusRAG(ix, env.Env, *cfg.Value().(*Options))
	if err != nil {
		return err
	}
	r := reachCounts{tg: tg}
	for _, q := range env.Queries {
		_, tr, err := mt.Trace(ctx, retrieve.Query{ID: q.ID, Text: q.Text}, 10)
		if err != nil {
			return fmt.Errorf("query %q: %w", q.ID, err)
		}
		if err := r.add(ix, q, tr); err != nil {
			return err
		}
	}
	r.print(w, len(env.Queries))
	return nil
}

// reachCounts tallies, over queries, question entities, seeds and how the
// gold passages relate to the seeds and the activated entities.
type reachCounts struct {
	tg                                                               *TriGraph
	withEnts, fallback, seeds, gold, goldNoEnt, goldSeed, goldActive int
	stages                                                           map[string][]time.Duration
}

func (r *reachCounts) add(ix *index.Index, q corpus.Query, tr *Trace) error {
	tg := r.tg
	if len(tr.QuestionEntities) > 0 {
		r.withEnts++
	}
	if tr.Fallback {
		r.fallback++
	}
	r.seeds += len(tr.Seeds)
	if r.stages == nil {
		r.stages = map[string][]time.Duration{}
	}
	for k, d := range tr.Stages {
		r.stages[k] = append(r.stages[k], d)
	}
	seedEnt, activeEnt := map[int32]bool{}, map[int32]bool{}
	for i, a := range tr.Active {
		activeEnt[a.Entity] = true
		if i < len(tr.Seeds) {
			seedEnt[a.Entity] = true // seeds are activated first
		}
	}
	for _, id := range q.Gold {
		p, ok := ix.Lookup(id)
		if !ok {
			return fmt.Errorf("query %q: gold id %q is not in the index", q.ID, id)
		}
		r.gold++
		if tg.PassEnts.Ptr[p+1] == tg.PassEnts.Ptr[p] {
			r.goldNoEnt++
		}
		if occursIn(tg, seedEnt, p) {
			r.goldSeed++
		}
		if occursIn(tg, activeEnt, p) {
			r.goldActive++
		}
	}
	return nil
}

// occursIn reports whether one of ents occurs in passage p (the bonus's
// lowercased counts).
func occursIn(tg *TriGraph, ents map[int32]bool, p int32) bool {
	for e := range ents {
		for q := tg.Occur.Ptr[e]; q < tg.Occur.Ptr[e+1]; q++ {
			if tg.Occur.Idx[q] == p {
				return true
			}
		}
	}
	return false
}

func (r *reachCounts) print(w io.Writer, n int) {
	pct := func(a, b int) float64 { return 100 * float64(a) / float64(max(b, 1)) }
	fmt.Fprintf(w, "questions %d: with an entity %.1f%%, dense fallback (no seed) %.1f%%, seeds per question %.2f\n",
		n, pct(r.withEnts, n), pct(r.fallback, n), float64(r.seeds)/float64(n))
	if r.gold > 0 { // answer-only sets have no gold passages
		fmt.Fprintf(w, "gold passages %d: without any entity %.1f%%, containing a seed entity %.1f%%, containing an activated entity %.1f%%\n",
			r.gold, pct(r.goldNoEnt, r.gold), pct(r.goldSeed, r.gold), pct(r.goldActive, r.gold))
	}
	fmt.Fprint(w, "nexusrag latency per stage, p50 / mean over the questions (ms; one query at a time):")
	for _, k := range []string{"embed", "ner", "seeds", "propagate", "bonus", "pagerank"} {
		ds := r.stages[k]
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		fmt.Fprintf(w, " %s %.3f / %.3f", k, ms(ds[len(ds)/2]), ms(sum/time.Duration(len(ds))))
	}
	fmt.Fprintln(w)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
