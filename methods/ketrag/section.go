package ketrag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/kgextract"
	"github.com/gleaner-rag/gleaner/models/ner"
	"github.com/gleaner-rag/gleaner/retrieve"
)

// KET-RAG's section (docs/index-format.md).
const (
	Section        = "ketrag"
	sectionVersion = 1
	fUnitPtr       = "unit_ptr.i64"
	buildHint      = "build them with `gleaner graph build --kind ketrag --index <dir>` (ketrag.Set)"
)

// ErrNoKETRAG is returned when ketrag runs on an index without KET-RAG's
// structures.
var ErrNoKETRAG = &index.MissingError{What: "KET-RAG structures", Hint: buildHint}

func init() {
	index.MustRegisterSection(index.SectionType{Name: Section, Version: sectionVersion, Update: index.Rebuild,
		Summary: "KET-RAG structures", Hint: buildHint, Load: load, Refresh: refresh, FromVectors: true,
		CanRefresh: func(ix *index.Index, settings json.RawMessage) error {
			_, _, err := refreshSettings(ix, settings)
			return err
		}})
}

// Of returns the index's KET-RAG structures, ErrNoKETRAG, or why the
// stored ones cannot be used.
func Of(ix *index.Index) (*KETRAG, error) {
	v, err := ix.Section(Section)
	if err != nil {
		return nil, err
	}
	return v.(*KETRAG), nil
}

// Meta describes the KET-RAG structures in the manifest.
type Meta struct {
	Tokenizer string              `json:"tokenizer"`
	Beta      float64             `json:"beta"`
	Selection string              `json:"selection"`
	Seed      int64               `json:"seed"`
	KNN       graphops.KNNOptions `json:"knn"`
	// Search and Ef are the chunk graph's search setting and HNSW
	// candidates; ChunkNeighbours says how its semantic neighbours were
	// found (exact, hnsw on the index's graph, or none). Builds before these
	// were recorded searched exactly.
	Search          string  `json:"search"`
	Ef              int     `json:"ef"`
	ChunkNeighbours string  `json:"chunk_neighbours"`
	Damping         float64 `json:"damping"`
	UnitTokens      int     `json:"unit_tokens"`
	PieceTokens     int     `json:"piece_tokens"`
	MaxDescriptions int     `json:"max_descriptions"`
	Extractor       string  `json:"extractor"`
	Chunks          int     `json:"chunks"`
	// Chunked says every node is a token-chunk piece (gleaner chunk):
	// pieces then concatenate into units as KET-RAG's do; passages join
	// with a line break between them.
	Chunked         bool `json:"chunked"`
	ChunkGraphEdges int  `json:"chunk_graph_edges"`
	Core            int  `json:"core"`
	Units           int  `json:"units"`
	UnitTextTokens  int  `json:"unit_text_tokens"`
	Pieces          int  `json:"pieces"`
	Entities        int  `json:"entities"`
	Relationships   int  `json:"relationships"`
	Keywords        int  `json:"keywords"`
	KeywordEdges    int  `json:"keyword_edges"`
	SentenceParts   int  `json:"sentence_parts"`
	// Usage is the extraction's cost as the extractor accounted it.
	Usage        kgextract.Usage `json:"usage"`
	BuildSeconds float64         `json:"build_seconds"`
}

// KETRAG is the index's KET-RAG structures: token counts, PageRank over
// the chunk graph, the core chunks and their units, the skeleton (entities
// and relationships with descriptions, vectors and the text units they
// came from) and the text–keyword bipartite graph.
type KETRAG struct {
	Meta        Meta
	NodeTokens  []int32       // cl100k tokens of each index node
	PageRank    []float32     // each node's PageRank in the chunk graph
	RankOrder   []int32       // the nodes by float64 PageRank, best first, ties to the lower id
	Core        []int32       // the skeleton's chunks, ascending
	UnitPtr     []int64       // unit u merges Core[UnitPtr[u]:UnitPtr[u+1]]
	Pieces      index.Strings // text units: units re-split into PieceTokens pieces
	PieceTokens []int32
	PieceUnit   []int32

	EntityNames, EntityTypes, EntityDescs index.Strings
	EntityRank                            []int32   // distinct relationships per entity
	EntityVecs                            []float32 // "name:description", unit length or zero
	EntityPieces                          graphops.CSR

	RelSrc, RelDst []int32
	RelDescs       index.Strings
	RelWeight      []float32
	RelVecs        []float32
	RelPieces      graphops.CSR
	EntityRels     graphops.CSR // entity → its relationships (derived)

	Keywords      index.Strings
	KeywordVecs   []float32 // mean of sentence-part vectors, not re-normalised
	KeywordChunks graphops.CSR
}

var (
	stringFiles = []struct {
		prefix string
		get    func(*KETRAG) *index.Strings
	}{
		{"pieces", func(k *KETRAG) *index.Strings { return &k.Pieces }},
		{"entity_names", func(k *KETRAG) *index.Strings { return &k.EntityNames }},
		{"entity_types", func(k *KETRAG) *index.Strings { return &k.EntityTypes }},
		{"entity_descs", func(k *KETRAG) *index.Strings { return &k.EntityDescs }},
		{"rel_descs", func(k *KETRAG) *index.Strings { return &k.RelDescs }},
		{"keywords", func(k *KETRAG) *index.Strings { return &k.Keywords }},
	}
	i32Files = []struct {
		name string
		get  func(*KETRAG) *[]int32
	}{
		{"node_tokens.i32", func(k *KETRAG) *[]int32 { return &k.NodeTokens }},
		{"core.i32", func(k *KETRAG) *[]int32 { return &k.Core }},
		{"rank_order.i32", func(k *KETRAG) *[]int32 { return &k.RankOrder }},
		{"piece_tokens.i32", func(k *KETRAG) *[]int32 { return &k.PieceTokens }},
		{"piece_unit.i32", func(k *KETRAG) *[]int32 { return &k.PieceUnit }},
		{"entity_rank.i32", func(k *KETRAG) *[]int32 { return &k.EntityRank }},
		{"rel_src.i32", func(k *KETRAG) *[]int32 { return &k.RelSrc }},
		{"rel_dst.i32", func(k *KETRAG) *[]int32 { return &k.RelDst }},
	}
	f32Files = []struct {
		name string
		get  func(*KETRAG) *[]float32
	}{
		{"pagerank.f32", func(k *KETRAG) *[]float32 { return &k.PageRank }},
		{"entity_vectors.f32", func(k *KETRAG) *[]float32 { return &k.EntityVecs }},
		{"rel_weight.f32", func(k *KETRAG) *[]float32 { return &k.RelWeight }},
		{"rel_vectors.f32", func(k *KETRAG) *[]float32 { return &k.RelVecs }},
		{"keyword_vectors.f32", func(k *KETRAG) *[]float32 { return &k.KeywordVecs }},
	}
	csrFiles = []struct {
		prefix string
		get    func(*KETRAG) *graphops.CSR
	}{
		{"entity_pieces", func(k *KETRAG) *graphops.CSR { return &k.EntityPieces }},
		{"rel_pieces", func(k *KETRAG) *graphops.CSR { return &k.RelPieces }},
		{"keyword_chunks", func(k *KETRAG) *graphops.CSR { return &k.KeywordChunks }},
	}
)

// Set builds KET-RAG's structures for the index at dir and stores them in
// the index, replacing earlier ones; the rewrite is atomic (a crash leaves
// the old index). e is the index's embedder when it is not LSA (nil: the
// index's own).
func Set(ctx context.Context, dir string, e models.Embedder, o BuildOptions) (*Meta, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	ix, err := index.OpenWithEmbedder(dir, e)
	if err != nil {
		return nil, err
	}
	defer ix.Close()
	k, err := Build(ctx, ix, o)
	if err != nil {
		return nil, err
	}
	o.Progress.Stage("write", 0)
	defer o.Progress.Finish()
	return &k.Meta, ix.StoreSection(ctx, dir, Section, k.Meta, k.write)
}

func (k *KETRAG) write(w *index.SectionWriter) error {
	errs := []error{w.I64(fUnitPtr, k.UnitPtr)}
	for _, s := range stringFiles {
		errs = append(errs, w.Packed(s.prefix, *s.get(k)))
	}
	for _, a := range i32Files {
		errs = append(errs, w.I32(a.name, *a.get(k)))
	}
	for _, a := range f32Files {
		errs = append(errs, w.F32(a.name, *a.get(k)))
	}
	for _, c := range csrFiles {
		g := c.get(k)
		errs = append(errs, w.I64(c.prefix+"_ptr.i64", g.Ptr), w.I32(c.prefix+"_idx.i32", g.Idx))
	}
	return errors.Join(errs...)
}

// load maps the KET-RAG structures and checks them against the index.
func load(ix *index.Index, r *index.SectionReader) (any, error) {
	k := &KETRAG{}
	if err := r.Meta(&k.Meta); err != nil {
		return nil, err
	}
	m := k.Meta
	var errs []error
	var err error
	k.UnitPtr, err = r.I64(fUnitPtr)
	errs = append(errs, err)
	counts := map[string]int{"pieces": m.Pieces, "entity_names": m.Entities, "entity_types": m.Entities,
		"entity_descs": m.Entities, "rel_descs": m.Relationships, "keywords": m.Keywords}
	for _, s := range stringFiles {
		*s.get(k), err = r.Strings(s.prefix, counts[s.prefix])
		errs = append(errs, err)
	}
	for _, a := range i32Files {
		*a.get(k), err = r.I32(a.name)
		errs = append(errs, err)
	}
	for _, a := range f32Files {
		*a.get(k), err = r.F32(a.name)
		errs = append(errs, err)
	}
	for _, c := range csrFiles {
		g := c.get(k)
		g.Ptr, err = r.I64(c.prefix + "_ptr.i64")
		errs = append(errs, err)
		g.Idx, err = r.I32(c.prefix + "_idx.i32")
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := k.check(ix.N(), ix.Meta.Dims); err != nil {
		return nil, err
	}
	k.deriveEntityRels()
	return k, nil
}

// check validates every array against the manifest's counts, so a
// damaged or crafted index is an error, never a panic at query time.
func (k *KETRAG) check(n, dims int) error {
	m := k.Meta
	for _, s := range []struct {
		name string
		st   index.Strings
		want int
	}{{"pieces", k.Pieces, m.Pieces}, {"entity names", k.EntityNames, m.Entities}, {"entity types", k.EntityTypes, m.Entities},
		{"entity descriptions", k.EntityDescs, m.Entities}, {"relationship descriptions", k.RelDescs, m.Relationships}, {"keywords", k.Keywords, m.Keywords}} {
		if s.st.Len() != s.want {
			return fmt.Errorf("%s: %d strings, the manifest says %d", s.name, s.st.Len(), s.want)
		}
	}
	lens := []struct {
		name      string
		got, want int
	}{
		{"node tokens", len(k.NodeTokens), n}, {"pagerank", len(k.PageRank), n}, {"rank order", len(k.RankOrder), n}, {"core", len(k.Core), m.Core},
		{"unit pointers", len(k.UnitPtr), m.Units + 1}, {"piece tokens", len(k.PieceTokens), m.Pieces}, {"piece units", len(k.PieceUnit), m.Pieces},
		{"entity ranks", len(k.EntityRank), m.Entities}, {"entity vectors", len(k.EntityVecs), m.Entities * dims},
		{"relationship sources", len(k.RelSrc), m.Relationships}, {"relationship targets", len(k.RelDst), m.Relationships},
		{"relationship weights", len(k.RelWeight), m.Relationships}, {"relationship vectors", len(k.RelVecs), m.Relationships * dims},
		{"keyword vectors", len(k.KeywordVecs), m.Keywords * dims},
	}
	for _, l := range lens {
		if l.got != l.want {
			return fmt.Errorf("%s: %d values, the manifest implies %d", l.name, l.got, l.want)
		}
	}
	for _, ids := range []struct {
		name string
		v    []int32
		max  int
	}{{"core", k.Core, n}, {"rank order", k.RankOrder, n}, {"piece units", k.PieceUnit, m.Units}, {"relationship sources", k.RelSrc, m.Entities}, {"relationship targets", k.RelDst, m.Entities}} {
		for i, x := range ids.v {
			if x < 0 || int(x) >= ids.max {
				return fmt.Errorf("%s[%d] = %d: out of range [0, %d)", ids.name, i, x, ids.max)
			}
		}
	}
	for i := 0; i < m.Units; i++ {
		if k.UnitPtr[i] > k.UnitPtr[i+1] || k.UnitPtr[0] != 0 || k.UnitPtr[m.Units] != int64(m.Core) {
			return fmt.Errorf("unit pointers do not cover the %d core chunks in order", m.Core)
		}
	}
	for _, c := range []struct {
		name       string
		g          graphops.CSR
		rows, cols int
	}{{"entity pieces", k.EntityPieces, m.Entities, m.Pieces}, {"relationship pieces", k.RelPieces, m.Relationships, m.Pieces},
		{"keyword chunks", k.KeywordChunks, m.Keywords, n}} {
		if err := checkRect(c.g, c.rows, c.cols); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return nil
}

// checkRect validates an unweighted rows × cols CSR read from disk.
func checkRect(g graphops.CSR, rows, cols int) error {
	if len(g.Ptr) != rows+1 || g.Ptr[0] != 0 || g.Ptr[rows] != int64(len(g.Idx)) {
		return fmt.Errorf("pointers do not cover %d rows and %d entries", rows, len(g.Idx))
	}
	for v := 0; v < rows; v++ {
		if g.Ptr[v] > g.Ptr[v+1] {
			return fmt.Errorf("pointers decrease at row %d", v)
		}
	}
	for i, u := range g.Idx {
		if u < 0 || int(u) >= cols {
			return fmt.Errorf("entry %d names column %d of %d", i, u, cols)
		}
	}
	return nil
}

// refresh builds KET-RAG's structures again from ix with the settings
// their description recorded (a live writer's stale ones), when they were
// extracted locally: an LLM extraction costs calls and money, so it is
// left to its command.
func refresh(ctx context.Context, ix *index.Index, settings json.RawMessage, env index.RefreshEnv) (*index.BuiltSection, error) {
	m, nerName, err := refreshSettings(ix, settings)
	if err != nil {
		return nil, err
	}
	var titles []string
	if nerName == "titles" || nerName == "both" {
		titles = ix.Names()
	}
	n, err := ner.New(nerName, titles)
	if err != nil {
		return nil, err
	}
	ex, err := kgextract.NewLocal(n)
	if err != nil {
		return nil, err
	}
	o := DefaultBuildOptions()
	o.Beta, o.Selection, o.Seed, o.KNN, o.Search, o.Ef, o.Damping = m.Beta, m.Selection, m.Seed, m.KNN, m.Search, m.Ef, m.Damping
	o.UnitTokens, o.PieceTokens, o.MaxDescriptions = m.UnitTokens, m.PieceTokens, m.MaxDescriptions
	o.Extractor, o.Backend, o.Logger = ex, env.Backend, env.Logger
	o.Workers = env.WorkersOr(o.Workers)
	k, err := Build(ctx, ix, o)
	if err != nil {
		return nil, err
	}
	return &index.BuiltSection{Name: Section, Meta: k.Meta, Write: k.write}, nil
}

// refreshSettings reads the settings stale KET-RAG structures were built
// with (over the defaults) and their local extractor's NER, or says why a
// refresh cannot build them (index.ErrNotRefreshable).
func refreshSettings(ix *index.Index, settings json.RawMessage) (Meta, string, error) {
	d := DefaultBuildOptions()
	m := Meta{Beta: d.Beta, Selection: d.Selection, Seed: d.Seed, KNN: d.KNN, Search: retrieve.SearchExact, Ef: d.Ef, Damping: d.Damping,
		UnitTokens: d.UnitTokens, PieceTokens: d.PieceTokens, MaxDescriptions: d.MaxDescriptions}
	m.KNN.LexicalBudget = -1
	if err := json.Unmarshal(settings, &m); err != nil {
		return m, "", fmt.Errorf("%w: its recorded settings do not read: %v", index.ErrNotRefreshable, err)
	}
	m.KNN.LexicalBudget = graphops.RecordedBudget(m.KNN.LexicalBudget)
	nerName, local := strings.CutPrefix(m.Extractor, "local:")
	switch {
	case !slices.Contains([]string{retrieve.SearchAuto, retrieve.SearchExact, retrieve.SearchHNSW}, m.Search) || m.Ef < 1:
		return m, "", fmt.Errorf("%w: its recorded chunk graph search %q (ef %d) is not one it can run; %s", index.ErrNotRefreshable, m.Search, m.Ef, buildHint)
	case m.Extractor == "":
		return m, "", fmt.Errorf("%w: its recorded settings name no extractor; %s", index.ErrNotRefreshable, buildHint)
	case !local:
		return m, "", fmt.Errorf("%w: extracted by %s, which costs calls and is only run when asked; %s", index.ErrNotRefreshable, m.Extractor, buildHint)
	case !slices.Contains(ner.Names(), nerName):
		return m, "", fmt.Errorf("%w: its recorded extractor %q uses an unknown NER; %s", index.ErrNotRefreshable, m.Extractor, buildHint)
	}
	if err := ix.CanEmbedText("KET-RAG's entities and keywords"); err != nil {
		return m, "", fmt.Errorf("%w: %v", index.ErrNotRefreshable, err)
	}
	return m, nerName, nil
}
