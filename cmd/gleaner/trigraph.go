package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/progress"
	"github.com/gleaner-rag/gleaner/kernels"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/kgextract"
	"github.com/gleaner-rag/gleaner/models/ner"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// triGraphFlags are the settings of `graph build --kind trigraph`.
type triGraphFlags struct {
	o                  index.TriGraphOptions
	ner                string
	biEncoder, pooling string
}

func (f *triGraphFlags) add(fl *pflag.FlagSet) {
	n := &f.o.Neighbours
	fl.StringVar(&f.ner, "ner", "both", "trigraph: entity extractor: "+strings.Join(ner.Names(), ", ")+" (prose: the embedded NER; titles: the corpus's titles and aliases as whole words; both: their union, chosen on the 2Wiki dev questions)")
	fl.IntVar(&f.o.Workers, "workers", f.o.Workers, "trigraph and ketrag: NER / extraction workers (ketrag llm: default --llm-concurrency)")
	fl.Float64Var(&n.CoShare, "co-share", n.CoShare, "trigraph W: keep the top max(1, share·nnz) co-occurrence counts per entity")
	fl.IntVar(&n.CoCap, "co-cap", n.CoCap, "trigraph W: at most this many co-occurrence counts per entity")
	fl.IntVar(&n.SimTopK, "sim-topk", n.SimTopK, "trigraph W: cosine neighbours per entity (exact top-k)")
	fl.IntVar(&n.Kappa, "kappa", n.Kappa, "trigraph W: κ, candidates per channel and neighbours kept per entity")
	fl.Float64Var(&n.Alpha, "w-alpha", n.Alpha, "trigraph W: α, co-occurrence share of the fused weight")
	fl.Float64Var(&n.Threshold, "tau", n.Threshold, "trigraph W: τ, a neighbour's least fused weight")
	fl.BoolVar(&f.o.BonusWholeWord, "bonus-whole-word", false, "trigraph: count entities in passages as whole words for the passage bonus (default: lowercased substrings, as the reference)")
	fl.StringVar(&f.biEncoder, "bi-encoder", "", "trigraph: the bi-encoder folder the index's vectors came from (embeds entities and sentences)")
	fl.StringVar(&f.pooling, "pooling", "mean", "trigraph: bi-encoder pooling: mean or cls")
}

func runTriGraph(cmd *cobra.Command, g *globals, dir string, f *triGraphFlags, start time.Time) error {
	titles, err := gazetteerTitles(dir, f.ner)
	if err != nil {
		return err
	}
	if f.o.Extractor, err = ner.New(f.ner, titles); err != nil {
		return fmt.Errorf("--ner: %w", err)
	}
	var e models.Embedder
	if f.biEncoder != "" {
		bi, err := openBiEncoder(g, f.biEncoder, f.pooling)
		if err != nil {
			return err
		}
		e = bi
	}
	f.o.Logger, f.o.Progress = g.log, progress.New(os.Stderr, g.log, 2*time.Second)
	m, err := index.SetTriGraph(cmd.Context(), dir, e, f.o)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "trigraph (%s): %d entities, %d sentences, %d passage–entity mentions; W: %.2f neighbours per entity, %.1f%% with none; stored in %s in %v\n",
		m.NER, m.Entities, m.Sentences, m.Mentions, m.MeanNeighbours, 100*m.ZeroNeighbours, dir, time.Since(start).Round(time.Millisecond))
	return nil
}

// gazetteerTitles lists the index's titles and aliases when the extractor
// needs them.
func gazetteerTitles(dir, name string) ([]string, error) {
	if name != "titles" && name != "both" {
		return nil, nil
	}
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		return nil, err
	}
	defer ix.Close()
	var out []string
	for i := 0; i < ix.N(); i++ { // copies: the strings alias the mapping Close releases
		out = append(out, strings.Clone(ix.Title(i)))
		for _, a := range ix.Aliases(i) {
			out = append(out, strings.Clone(a))
		}
	}
	return out, nil
}

// printTriGraphStats prints the Tri-Graph's entity statistics and, with
// queries, how well question entities reach the gold passages: the
// figures that explain nexusrag's recall.
func printTriGraphStats(ctx context.Context, w io.Writer, ix *index.Index, qs []corpus.Query, o retrieve.Options) error {
	tg := ix.TriGraph
	if tg == nil {
		return fmt.Errorf("retrieve: %w", retrieve.ErrNoTriGraph)
	}
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
	if len(qs) == 0 {
		return nil
	}
	meth, err := retrieve.NewWith("nexusrag", ix, o)
	if err != nil {
		return err
	}
	tracer := meth.(interface {
		Trace(context.Context, retrieve.Query, int) ([]kernels.Hit, *retrieve.TriGraphTrace, error)
	})
	var r reachCounts
	for _, q := range qs {
		_, tr, err := tracer.Trace(ctx, retrieve.Query{ID: q.ID, Text: q.Text}, 10)
		if err != nil {
			return fmt.Errorf("query %q: %w", q.ID, err)
		}
		if err := r.add(ix, q, tr); err != nil {
			return err
		}
	}
	r.print(w, len(qs))
	return nil
}

// reachCounts tallies, over queries, question entities, seeds and how the
// gold passages relate to the seeds and the activated entities.
type reachCounts struct {
	withEnts, fallback, seeds, gold, goldNoEnt, goldSeed, goldActive int
	stages                                                           map[string][]time.Duration
}

func (r *reachCounts) add(ix *index.Index, q corpus.Query, tr *retrieve.TriGraphTrace) error {
	tg := ix.TriGraph
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
func occursIn(tg *index.TriGraph, ents map[int32]bool, p int32) bool {
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

// demoGraphs builds the demo index's Tri-Graph and KET-RAG structures with
// one entity extractor (prose and the corpus's titles), so every method
// runs in the demo.
func demoGraphs(ctx context.Context, g *globals, c *corpus.Corpus, idir string) error {
	var titles []string
	for _, n := range c.Nodes {
		titles = append(append(titles, n.Title), n.Aliases...)
	}
	ex, err := ner.New("both", titles)
	if err != nil {
		return err
	}
	o := index.DefaultTriGraphOptions()
	o.Extractor = ex
	o.Logger, o.Progress = g.log, progress.New(os.Stderr, g.log, 2*time.Second)
	if _, err := index.SetTriGraph(ctx, idir, nil, o); err != nil {
		return err
	}
	ko := index.DefaultKETRAGOptions()
	if ko.Extractor, err = kgextract.NewLocal(ex); err != nil {
		return err
	}
	ko.Logger, ko.Progress = o.Logger, o.Progress
	_, err = index.SetKETRAG(ctx, idir, nil, ko)
	return err
}
