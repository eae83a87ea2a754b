package trigraph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/memo"
	"github.com/gleaner-rag/gleaner/internal/parallel"
	"github.com/gleaner-rag/gleaner/internal/progress"
	"github.com/gleaner-rag/gleaner/models/ner"
)

// BuildOptions configure the Tri-Graph of NexusRAG and LinearRAG
// (docs/methods.md §2.2–2.3). Start from DefaultBuildOptions and set
// Extractor; every field is used as given.
type BuildOptions struct {
	// Extractor finds entities in each sentence (ner.New: prose, titles, both).
	Extractor ner.EntityExtractor
	// Workers run NER in parallel, ≥ 1.
	Workers int
	// Neighbours configure the neighbour matrix W.
	Neighbours graphops.NeighbourOptions
	// BonusWholeWord counts an entity in a passage for the passage bonus
	// only as a whole word; false (the reference) counts lowercased
	// substrings, so "US" also counts inside "used".
	BonusWholeWord bool
	// Backend runs the neighbour matrix's cosine top-k; required.
	Backend  engine.Backend
	Logger   *slog.Logger      // nil: discard
	Progress progress.Reporter // nil: none
}

// DefaultBuildOptions are the reference's settings, with two NER workers.
func DefaultBuildOptions() BuildOptions {
	return BuildOptions{Workers: 2, Neighbours: graphops.DefaultNeighbourOptions()}
}

func (o *BuildOptions) validate() error {
	switch {
	case o.Extractor == nil:
		return errors.New("trigraph: the build needs an entity extractor (ner.New)")
	case o.Workers < 1:
		return fmt.Errorf("trigraph: workers %d: want ≥ 1", o.Workers)
	case o.Backend == nil:
		return errors.New("trigraph: the build needs BuildOptions.Backend (engine.Open)")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = progress.Nop{}
	}
	return o.Neighbours.Validate()
}

// passageNER is one passage's sentences that mention entities.
type passageNER struct {
	sents     [][]string // per kept sentence: its text, then its entities
	titleOnly [][]bool   // per kept sentence and entity: only a title gazetteer found it there
	ents      []string   // the passage's distinct entities, in order
}

// BuildTriGraph runs NER over every node (title and text, as the index
// saw them), then builds the stores, the counts, the vectors and W.
func Build(ctx context.Context, ix *index.Index, o BuildOptions) (*TriGraph, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if err := ix.CanEmbedText("the tri-graph's entities and sentences"); err != nil {
		return nil, err
	}
	texts := make([]string, ix.N())
	for i := range texts {
		texts[i] = ix.NodeText(i)
	}
	pn, err := extractAll(ctx, texts, ix.NodeID, o)
	if err != nil {
		return nil, err
	}
	tg := assemble(texts, pn)
	o.Progress.Stage("tri-graph occurrences", 0)
	tg.Occur = occurrences(texts, tg.Entities, o.BonusWholeWord)
	o.Progress.Finish()
	out := &TriGraph{TriGraph: tg.TriGraph, SentenceText: tg.sentText, order: tg.order, views: memo.NewLRU[viewKey, viewResult](maxViews)}
	if out.EntityVecs, err = ix.EmbedTexts(ctx, "entities", tg.Entities, o.Progress); err != nil {
		return nil, err
	}
	if out.SentenceVecs, err = ix.EmbedTexts(ctx, "sentences", tg.sentText, o.Progress); err != nil {
		return nil, err
	}
	no := o.Neighbours
	no.Progress = o.Progress
	if err = out.BuildNeighbours(ctx, o.Backend, out.EntityVecs, ix.Meta.Dims, no); err != nil {
		return nil, err
	}
	out.Meta = out.describe(o)
	o.Logger.Info("tri-graph built", "entities", out.Meta.Entities, "sentences", out.Meta.Sentences, "mentions", out.Meta.Mentions,
		"mean_neighbours", out.Meta.MeanNeighbours, "zero_neighbour_rate", out.Meta.ZeroNeighbours)
	return out, nil
}

// extractAll runs segmentation and NER over the texts on o.Workers
// goroutines, reporting progress.
func extractAll(ctx context.Context, texts []string, id func(int) string, o BuildOptions) ([]passageNER, error) {
	seg, err := ner.NewSegmenter()
	if err != nil {
		return nil, err
	}
	out := make([]passageNER, len(texts))
	err = parallel.ForEach(ctx, len(texts), o.Workers, o.Progress, "ner ("+o.Extractor.Name()+")", func(ctx context.Context, i int) error {
		p, err := passageEntities(ctx, seg, o.Extractor, texts[i])
		if err != nil {
			return fmt.Errorf("trigraph: NER on node %d (id %q): %w", i, id(i), err)
		}
		out[i] = p
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// passageEntities finds the entities of each sentence of a passage and
// keeps the sentences that have one.
func passageEntities(ctx context.Context, seg *ner.Segmenter, ex ner.EntityExtractor, text string) (passageNER, error) {
	var p passageNER
	rec := &originRecorder{ex: ex, found: map[string]map[string]bool{}}
	sents, err := ner.Extract(ctx, seg, rec, text)
	if err != nil {
		return p, err
	}
	seen := map[string]bool{}
	for _, s := range sents {
		if len(s.Entities) == 0 {
			continue
		}
		p.sents = append(p.sents, append([]string{s.Text}, s.Entities...))
		p.titleOnly = append(p.titleOnly, rec.titleOnly(s))
		for _, e := range s.Entities {
			if !seen[e] {
				seen[e] = true
				p.ents = append(p.ents, e)
			}
		}
	}
	return p, nil
}

// originRecorder is the build's extractor, noting per line which entities
// something other than a title gazetteer found (ner.EntitiesByOrigin).
// One serves one passage.
type originRecorder struct {
	ex    ner.EntityExtractor
	found map[string]map[string]bool // line → entities found other than by title
}

func (r *originRecorder) Name() string { return r.ex.Name() }

func (r *originRecorder) Entities(ctx context.Context, line string) ([]string, error) {
	ents, titleOnly, err := ner.EntitiesByOrigin(ctx, r.ex, line)
	if err != nil {
		return nil, err
	}
	other := map[string]bool{}
	for i, e := range ents {
		other[e] = !titleOnly[i]
	}
	r.found[line] = other
	return ents, nil
}

// titleOnly says, per entity of s, whether only a title gazetteer found it
// in any of s's lines (as ner.Extract cut them).
func (r *originRecorder) titleOnly(s ner.Sentence) []bool {
	lines := strings.Split(s.Text, "\n")
	out := make([]bool, len(s.Entities))
	for i, e := range s.Entities {
		out[i] = !slices.ContainsFunc(lines, func(line string) bool { return r.found[line][e] })
	}
	return out
}

// assembled is the Tri-Graph before vectors and W.
type assembled struct {
	*graphops.TriGraph
	sentText []string
	order    passageOrder
}

// assemble numbers entities (by first mention) and sentences (distinct
// texts, by first occurrence) and builds the mention CSRs and the
// case-sensitive passage–entity counts.
func assemble(texts []string, pn []passageNER) assembled {
	entID, sentID := map[string]int32{}, map[string]int32{}
	tg := &graphops.TriGraph{Passages: len(texts)}
	var sentText []string
	var sentEnts [][]int32
	var sentTitleOnly []map[int32]bool // per sentence: its entities only a title gazetteer found
	pe := graphops.CSR{Ptr: make([]int64, len(texts)+1), Idx: []int32{}, W: []float32{}}
	ps := graphops.CSR{Ptr: make([]int64, len(texts)+1), Idx: []int32{}}
	id := func(e string) int32 {
		if k, ok := entID[e]; ok {
			return k
		}
		entID[e] = int32(len(tg.Entities))
		tg.Entities = append(tg.Entities, e)
		return entID[e]
	}
	for p := range pn {
		for si, s := range pn[p].sents {
			if k, ok := sentID[s[0]]; ok {
				ps.Idx = append(ps.Idx, k)
				continue
			}
			ps.Idx = append(ps.Idx, int32(len(sentText)))
			sentID[s[0]] = int32(len(sentText))
			sentText = append(sentText, s[0])
			row := make([]int32, 0, len(s)-1)
			only := map[int32]bool{}
			for i, e := range s[1:] {
				row = append(row, id(e))
				only[id(e)] = pn[p].titleOnly[si][i]
			}
			sentEnts = append(sentEnts, row)
			sentTitleOnly = append(sentTitleOnly, only)
		}
		for _, e := range pn[p].ents {
			pe.Idx = append(pe.Idx, id(e))
			pe.W = append(pe.W, float32(strings.Count(texts[p], e)))
		}
		pe.Ptr[p+1] = int64(len(pe.Idx))
		ps.Ptr[p+1] = int64(len(ps.Idx))
	}
	order := passageOrder{entities: slices.Clone(pe.Idx), sentences: ps}
	tg.Sentences = len(sentText)
	tg.SentEnts = graphops.RowsCSR(sentEnts)
	tg.EntSents = graphops.Transpose(tg.SentEnts, len(tg.Entities))
	order.titleOnly = make([]byte, len(tg.SentEnts.Idx))
	for s := range sentEnts {
		for q := tg.SentEnts.Ptr[s]; q < tg.SentEnts.Ptr[s+1]; q++ {
			if sentTitleOnly[s][tg.SentEnts.Idx[q]] {
				order.titleOnly[q] = 1
			}
		}
	}
	tg.PassEnts = graphops.SortRows(pe)
	return assembled{tg, sentText, order}
}

// occurrences counts, per entity, its non-overlapping occurrences in every
// passage (Python's str.count), lowercased both sides, in one Aho–Corasick
// pass per passage.
func occurrences(texts, ents []string, wholeWord bool) graphops.CSR {
	lower := make([]string, len(ents))
	owners := map[string][]int32{}
	for e, s := range ents {
		lower[e] = strings.ToLower(s)
		owners[lower[e]] = append(owners[lower[e]], int32(e))
	}
	m := graphops.NewMatcher(lower)
	rows := make([][]countAt, len(ents))
	for p, t := range texts {
		lt := strings.ToLower(t)
		count, lastEnd := map[int32]int{}, map[int32]int{}
		m.Scan(lt, func(pat int32, start, end int) {
			if (wholeWord && !graphops.IsWholeWord(lt, start, end)) || (count[pat] > 0 && start < lastEnd[pat]) {
				return
			}
			count[pat]++
			lastEnd[pat] = end
		})
		for pat, c := range count {
			for _, e := range owners[lower[pat]] {
				rows[e] = append(rows[e], countAt{int32(p), c})
			}
		}
	}
	c := graphops.CSR{Ptr: make([]int64, len(ents)+1), Idx: []int32{}, W: []float32{}}
	for e, r := range rows {
		for _, x := range r { // passages were visited in order
			c.Idx = append(c.Idx, x.col)
			c.W = append(c.W, float32(x.n))
		}
		c.Ptr[e+1] = int64(len(c.Idx))
	}
	return c
}

type countAt struct {
	col int32
	n   int
}

// describe summarises the Tri-Graph for the manifest.
func (t *TriGraph) describe(o BuildOptions) Meta {
	ne := len(t.Entities)
	zero := 0
	for e := 0; e < ne; e++ {
		if t.W.Ptr[e+1] == t.W.Ptr[e] {
			zero++
		}
	}
	m := Meta{NER: o.Extractor.Name(), Entities: ne, Sentences: t.Sentences, Mentions: len(t.PassEnts.Idx),
		Neighbours: o.Neighbours, BonusWholeWord: o.BonusWholeWord}
	if ne > 0 {
		m.MeanNeighbours = round4(float64(len(t.W.Idx)) / float64(ne))
		m.ZeroNeighbours = round4(float64(zero) / float64(ne))
	}
	return m
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
