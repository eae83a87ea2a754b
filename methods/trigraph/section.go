package trigraph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/memo"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/ner"
)

// The Tri-Graph's section (docs/index-format.md).
const (
	Section        = "trigraph"
	sectionVersion = 1
	fEntities      = "entities"  // strings: .bytes + _off.i64
	fSentences     = "sentences" // strings
	fEntVec        = "entity_vectors.f32"
	fSentVec       = "sentence_vectors.f32"
	// The passages' mentions in reading order (Tri-Graphs built since
	// filters: a filtered query numbers its view from them).
	fOrderEnts    = "pass_order_idx.i32" // each passage's entities in first-mention order; rows as pass_ents
	fOrderSentPtr = "pass_sents_ptr.i64"
	fOrderSentIdx = "pass_sents_idx.i32" // each passage's sentences, in order
	fTitleOnly    = "sent_titles.bytes"  // bytes as sent_ents: 1 where only a title gazetteer found the entity
	buildHint     = "build one with `gleaner graph build --kind trigraph --index <dir>` (trigraph.Set)"
)

// ErrNoTriGraph is returned when nexusrag or linearrag runs on an index
// without a Tri-Graph.
var ErrNoTriGraph = &index.MissingError{What: "Tri-Graph", Hint: buildHint}

func init() {
	index.MustRegisterSection(index.SectionType{Name: Section, Version: sectionVersion, Update: index.Rebuild,
		Summary: "Tri-Graph", Hint: buildHint, Load: load, Refresh: refresh, FromVectors: true,
		CanRefresh: func(ix *index.Index, settings json.RawMessage) error {
			_, err := refreshSettings(ix, settings)
			return err
		}})
}

// csrs names the Tri-Graph's CSR files: prefix_ptr.i64, prefix_idx.i32
// and, when weighted, prefix_w.f32.
var csrs = []struct {
	prefix   string
	weighted bool
	get      func(*graphops.TriGraph) *graphops.CSR
}{
	{"ent_sents", false, func(t *graphops.TriGraph) *graphops.CSR { return &t.EntSents }},
	{"sent_ents", false, func(t *graphops.TriGraph) *graphops.CSR { return &t.SentEnts }},
	{"pass_ents", true, func(t *graphops.TriGraph) *graphops.CSR { return &t.PassEnts }},
	{"occur", true, func(t *graphops.TriGraph) *graphops.CSR { return &t.Occur }},
	{"neighbours", true, func(t *graphops.TriGraph) *graphops.CSR { return &t.W }},
}

// TriGraph is a built Tri-Graph with its entity and sentence vectors
// (rows of the index's embedder, unit length or zero).
type TriGraph struct {
	*graphops.TriGraph
	EntityVecs   []float32 // len(Entities) × Dims
	SentenceVecs []float32 // Sentences × Dims
	SentenceText []string  // nil when opened from disk (read Sentence(i))
	Meta         Meta
	sentences    index.Strings
	order        passageOrder // empty in a Tri-Graph built before filters
	views        *viewCache   // filtered queries' views (nil in a view)
}

// passageOrder is each passage's entities (in first-mention order; rows as
// PassEnts's) and sentences (in order, repeats included), as the build met
// them: a view over some passages numbers its entities and sentences from
// it exactly as a build over those passages alone would.
//
// titleOnly marks, beside each sentence→entity entry, the entities that
// only a title gazetteer found there: a view drops those whose title no
// allowed node has.
type passageOrder struct {
	entities  []int32
	sentences graphops.CSR
	titleOnly []byte
}

// Meta describes the Tri-Graph in the manifest.
type Meta struct {
	NER            string                    `json:"ner"`
	Entities       int                       `json:"entities"`
	Sentences      int                       `json:"sentences"`
	Mentions       int                       `json:"mentions"` // passage–entity pairs
	Neighbours     graphops.NeighbourOptions `json:"neighbours"`
	BonusWholeWord bool                      `json:"bonus_whole_word"`
	MeanNeighbours float64                   `json:"mean_neighbours"`
	ZeroNeighbours float64                   `json:"zero_neighbour_rate"`
}

// Of returns the index's Tri-Graph, ErrNoTriGraph, or why the stored one
// cannot be used.
func Of(ix *index.Index) (*TriGraph, error) {
	v, err := ix.Section(Section)
	if err != nil {
		return nil, err
	}
	return v.(*TriGraph), nil
}

// Sentence returns the text of sentence i.
func (t *TriGraph) Sentence(i int) string {
	if t.SentenceText != nil {
		return t.SentenceText[i]
	}
	return t.sentences.At(i)
}

// Set builds the Tri-Graph of the index at dir and stores it in the index,
// replacing any previous one; the rewrite is atomic (a crash leaves the
// old index). The index's embedder embeds entities and sentences: an
// index built with a bi-encoder needs it as e (nil: the index's own, LSA).
func Set(ctx context.Context, dir string, e models.Embedder, o BuildOptions) (*Meta, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	ix, err := index.OpenWithEmbedder(dir, e)
	if err != nil {
		return nil, err
	}
	defer ix.Close()
	tg, err := Build(ctx, ix, o)
	if err != nil {
		return nil, err
	}
	o.Progress.Stage("write", 0)
	defer o.Progress.Finish()
	return &tg.Meta, ix.StoreSection(ctx, dir, Section, tg.Meta, tg.write)
}

// write stores the Tri-Graph's arrays.
func (t *TriGraph) write(w *index.SectionWriter) error {
	errs := []error{
		w.Strings(fEntities, t.Entities), w.Strings(fSentences, t.SentenceText),
		w.F32(fEntVec, t.EntityVecs), w.F32(fSentVec, t.SentenceVecs),
		w.I32(fOrderEnts, t.order.entities), w.I64(fOrderSentPtr, t.order.sentences.Ptr), w.I32(fOrderSentIdx, t.order.sentences.Idx),
		w.Bytes(fTitleOnly, t.order.titleOnly),
	}
	for _, c := range csrs {
		g := c.get(t.TriGraph)
		errs = append(errs, w.I64(c.prefix+"_ptr.i64", g.Ptr), w.I32(c.prefix+"_idx.i32", g.Idx))
		if c.weighted {
			errs = append(errs, w.F32(c.prefix+"_w.f32", g.W))
		}
	}
	return errors.Join(errs...)
}

// load maps the Tri-Graph and checks it against the index.
func load(ix *index.Index, r *index.SectionReader) (any, error) {
	var m Meta
	if err := r.Meta(&m); err != nil {
		return nil, err
	}
	tg := &TriGraph{TriGraph: &graphops.TriGraph{Passages: ix.N(), Sentences: m.Sentences}, Meta: m, views: memo.NewLRU[viewKey, viewResult](maxViews)}
	var errs []error
	for _, c := range csrs {
		g := c.get(tg.TriGraph)
		var e1, e2, e3 error
		g.Ptr, e1 = r.I64(c.prefix + "_ptr.i64")
		g.Idx, e2 = r.I32(c.prefix + "_idx.i32")
		if c.weighted {
			g.W, e3 = r.F32(c.prefix + "_w.f32")
		}
		errs = append(errs, e1, e2, e3)
	}
	var e1, e2, e3, e4 error
	tg.EntityVecs, e1 = r.F32(fEntVec)
	tg.SentenceVecs, e2 = r.F32(fSentVec)
	ents, e3 := r.Strings(fEntities, m.Entities)
	tg.sentences, e4 = r.Strings(fSentences, m.Sentences)
	if err := errors.Join(append(errs, e1, e2, e3, e4)...); err != nil {
		return nil, err
	}
	tg.Entities = make([]string, ents.Len())
	for i := range tg.Entities {
		tg.Entities[i] = ents.At(i)
	}
	if err := tg.check(ix.Meta.Dims); err != nil {
		return nil, err
	}
	if r.Has(fOrderEnts) {
		if err := tg.loadOrder(r); err != nil {
			return nil, err
		}
	}
	return tg, nil
}

// loadOrder reads and checks the passages' mention order.
func (t *TriGraph) loadOrder(r *index.SectionReader) error {
	var e1, e2, e3, e4 error
	t.order.entities, e1 = r.I32(fOrderEnts)
	t.order.sentences.Ptr, e2 = r.I64(fOrderSentPtr)
	t.order.sentences.Idx, e3 = r.I32(fOrderSentIdx)
	t.order.titleOnly, e4 = r.Bytes(fTitleOnly)
	if err := errors.Join(e1, e2, e3, e4); err != nil {
		return err
	}
	return t.order.check(t.TriGraph)
}

// check validates the order against the Tri-Graph: each passage's entity
// row holds the entities of its PassEnts row, and sentence ids are in range.
func (o passageOrder) check(t *graphops.TriGraph) error {
	if len(o.entities) != len(t.PassEnts.Idx) {
		return fmt.Errorf("%s: %d entries, pass_ents has %d", fOrderEnts, len(o.entities), len(t.PassEnts.Idx))
	}
	for p := 0; p < t.Passages; p++ {
		lo, hi := t.PassEnts.Ptr[p], t.PassEnts.Ptr[p+1]
		if !slices.Equal(slices.Sorted(slices.Values(o.entities[lo:hi])), t.PassEnts.Idx[lo:hi]) {
			return fmt.Errorf("%s: passage %d's entities differ from pass_ents", fOrderEnts, p)
		}
	}
	if len(o.titleOnly) != len(t.SentEnts.Idx) || slices.ContainsFunc(o.titleOnly, func(b byte) bool { return b > 1 }) {
		return fmt.Errorf("%s: %d flags of 0 or 1 wanted, one per sentence–entity entry (%d)", fTitleOnly, len(o.titleOnly), len(t.SentEnts.Idx))
	}
	s := o.sentences
	if len(s.Ptr) != t.Passages+1 || s.Ptr[0] != 0 || s.Ptr[t.Passages] != int64(len(s.Idx)) || !slices.IsSorted(s.Ptr) {
		return fmt.Errorf("pass_sents: pointers do not cover %d passages and %d entries", t.Passages, len(s.Idx))
	}
	for i, x := range s.Idx {
		if x < 0 || int(x) >= t.Sentences {
			return fmt.Errorf("pass_sents: entry %d names sentence %d of %d", i, x, t.Sentences)
		}
	}
	return nil
}

// check validates the arrays' shapes against the manifest.
func (t *TriGraph) check(dims int) error {
	ne, ns := len(t.Entities), t.Sentences
	switch {
	case ne != t.Meta.Entities:
		return fmt.Errorf("%d entity strings, the manifest says %d", ne, t.Meta.Entities)
	case len(t.EntityVecs) != ne*dims:
		return fmt.Errorf("%s: %d values for %d entities of %d dims", fEntVec, len(t.EntityVecs), ne, dims)
	case len(t.SentenceVecs) != ns*dims:
		return fmt.Errorf("%s: %d values for %d sentences of %d dims", fSentVec, len(t.SentenceVecs), ns, dims)
	}
	return t.Validate()
}

// refresh builds the Tri-Graph again from ix with the settings its
// description recorded (a live writer's stale one: index.RefreshStale).
func refresh(ctx context.Context, ix *index.Index, settings json.RawMessage, env index.RefreshEnv) (*index.BuiltSection, error) {
	m, err := refreshSettings(ix, settings)
	if err != nil {
		return nil, err
	}
	var titles []string
	if m.NER == "titles" || m.NER == "both" {
		titles = ix.Names()
	}
	ex, err := ner.New(m.NER, titles)
	if err != nil {
		return nil, err
	}
	o := DefaultBuildOptions()
	o.Extractor, o.Neighbours, o.BonusWholeWord, o.Backend, o.Logger = ex, m.Neighbours, m.BonusWholeWord, env.Backend, env.Logger
	o.Workers = env.WorkersOr(o.Workers)
	tg, err := Build(ctx, ix, o)
	if err != nil {
		return nil, err
	}
	return &index.BuiltSection{Name: Section, Meta: tg.Meta, Write: tg.write}, nil
}

// refreshSettings reads the settings a stale Tri-Graph was built with
// (over the defaults, for fields an older build did not record), or says
// why a refresh cannot build it (index.ErrNotRefreshable).
func refreshSettings(ix *index.Index, settings json.RawMessage) (Meta, error) {
	m := Meta{Neighbours: graphops.DefaultNeighbourOptions()}
	m.Neighbours.ANNFrom = 0 // builds before the threshold was recorded were exact
	if err := json.Unmarshal(settings, &m); err != nil {
		return m, fmt.Errorf("%w: its recorded settings do not read: %v", index.ErrNotRefreshable, err)
	}
	if !slices.Contains(ner.Names(), m.NER) {
		return m, fmt.Errorf("%w: its recorded settings name entity extractor %q, not one of %v", index.ErrNotRefreshable, m.NER, ner.Names())
	}
	if err := ix.CanEmbedText("the tri-graph's entities and sentences"); err != nil {
		return m, fmt.Errorf("%w: %v", index.ErrNotRefreshable, err)
	}
	return m, nil
}
