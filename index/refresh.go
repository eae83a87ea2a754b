package index

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops"
)

// A live writer's changes leave sections whose policy is Rebuild stale.
// Those whose type has a Refresh function can be built again from the
// index in memory (RefreshStale) and put into a new index beside the
// rest (WithSections), so that the writer brings them back by itself when
// the writes pause; their files are written at its next checkpoint.

// RefreshEnv is what a section's Refresh gets injected.
type RefreshEnv struct {
	Backend engine.Backend // required
	Logger  *slog.Logger   // nil: none
	// Workers bounds the goroutines a refresh runs at once (≥ 1; 0: one
	// per CPU). Builds give the same result at any number.
	Workers int
}

// ErrNotRefreshable marks a stale section that its type cannot build in
// memory as it stands (an LLM extraction, settings not recorded, an
// index whose text embedder is not at hand): it stays stale, for its
// build command, and a refresh passes it by without failing.
var ErrNotRefreshable = errors.New("not refreshable")

// WorkersOr is env's bound on goroutines, or n when it sets none.
func (e RefreshEnv) WorkersOr(n int) int {
	if e.Workers > 0 {
		return e.Workers
	}
	return n
}

// BuiltSection is a section computed in memory: its description and the
// function that writes its files (as StoreSection takes them).
type BuiltSection struct {
	Name  string
	Meta  any
	Write func(*SectionWriter) error
}

// memFiles are a section's files held in memory, by store name: typed
// arrays as SectionWriter got them ([]float32, []uint32, []int32, []int64,
// []byte) or a jsonDoc.
type memFiles map[string]any

// jsonDoc is a JSON file's bytes.
type jsonDoc []byte

// KindRefresher builds the edges of a derived kind again from an index
// held in memory with the settings they were built with
// (Meta.KindSettings), as its build step does.
type KindRefresher func(ctx context.Context, ix *Index, settings json.RawMessage, env RefreshEnv) ([]graphops.Edge, error)

var kindRefreshers = map[string]KindRefresher{} // under kindMu

// RegisterKindRefresher registers the refresher of kind (the package that
// builds the kind registers it in init).
func RegisterKindRefresher(kind string, f KindRefresher) error {
	kindMu.Lock()
	defer kindMu.Unlock()
	if _, dup := kindRefreshers[kind]; dup {
		return fmt.Errorf("index: kind %q has a refresher already", kind)
	}
	kindRefreshers[kind] = f
	return nil
}

// kindRefresher is kind's refresher, nil when it has none.
func kindRefresher(kind string) KindRefresher {
	kindMu.RLock()
	defer kindMu.RUnlock()
	return kindRefreshers[kind]
}

// Built is what a refresh built: sections, and the edges of edge kinds.
type Built struct {
	Sections []*BuiltSection
	Kinds    []BuiltKind
}

// BuiltKind is the edges of one derived kind built again.
type BuiltKind struct {
	Kind  string
	Edges []graphops.Edge
}

// KindLabel is how refresh reports name an edge kind ("knn edges").
func KindLabel(kind string) string { return kind + " edges" }

// Refreshable names what of the index is stale and can be built again in
// memory: sections whose types can (SectionType.Refresh, and CanRefresh
// agrees), sorted, then edge kinds with a refresher and recorded settings
// (as KindLabel names them).
func (ix *Index) Refreshable() []string {
	out := ix.refreshableSections()
	for _, k := range ix.refreshableKinds() {
		out = append(out, KindLabel(k))
	}
	return out
}

// refreshableKinds are the stale edge kinds a refresh can build.
func (ix *Index) refreshableKinds() []string {
	s := ix.Meta.Stale
	if s == nil {
		return nil
	}
	var out []string
	for _, k := range s.GraphKinds {
		if kindRefresher(k) != nil && len(ix.Meta.KindSettings[k]) > 0 {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// refreshableSections are the stale sections a refresh can build.
func (ix *Index) refreshableSections() []string {
	s := ix.Meta.Stale
	if s == nil {
		return nil
	}
	var out []string
	for _, name := range s.Sections {
		t, ok := LookupSection(name)
		if !ok || t.Refresh == nil || len(s.Settings[name]) == 0 {
			continue
		}
		if t.CanRefresh == nil || t.CanRefresh(ix, s.Settings[name]) == nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// RefreshStale builds every refreshable stale section and edge kind of ix
// again, in memory, with the settings it was built with. One that fails is
// left stale and named in the error; the others are returned.
func RefreshStale(ctx context.Context, ix *Index, env RefreshEnv) (*Built, error) {
	if env.Backend == nil {
		return nil, errors.New("index: a refresh needs RefreshEnv.Backend (engine.Open)")
	}
	if ix.ndead > 0 {
		return nil, fmt.Errorf("index: a refresh of an index with %d deleted nodes would build them into its sections: refresh its compaction (Compact)", ix.ndead)
	}
	built := &Built{}
	var errs []error
	for _, name := range ix.refreshableSections() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t, _ := LookupSection(name)
		b, err := t.Refresh(ctx, ix, ix.Meta.Stale.Settings[name], env)
		switch {
		case errors.Is(err, ErrNotRefreshable):
			continue
		case err == nil && (b == nil || b.Name != name || b.Write == nil):
			err = fmt.Errorf("its refresh returned %+v, not section %q", b, name)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("index: refreshing section %q (%s): %w", name, t.Summary, err))
			continue
		}
		built.Sections = append(built.Sections, b)
	}
	errs = append(errs, refreshKinds(ctx, ix, env, built))
	return built, errors.Join(errs...)
}

// refreshKinds builds the refreshable stale edge kinds of ix into built,
// over ix with the sections built already (a knn graph finds its
// neighbours on a fresh HNSW graph, as its build step does after one).
func refreshKinds(ctx context.Context, ix *Index, env RefreshEnv, built *Built) error {
	kinds := ix.refreshableKinds()
	if len(kinds) == 0 {
		return nil
	}
	over := ix
	if len(built.Sections) > 0 {
		with, _, _ := ix.WithSections(built.Sections...) // one that does not load is reported by WithBuilt
		defer with.Close()
		over = with
	}
	var errs []error
	for _, k := range kinds {
		if err := ctx.Err(); err != nil {
			return err
		}
		es, err := kindRefresher(k)(ctx, over, ix.Meta.KindSettings[k], env)
		if err == nil {
			err = checkEdges(es, ix.N())
		}
		if err != nil {
			if !errors.Is(err, ErrNotRefreshable) {
				errs = append(errs, fmt.Errorf("index: refreshing the %s edges: %w", k, err))
			}
			continue
		}
		built.Kinds = append(built.Kinds, BuiltKind{Kind: k, Edges: es})
	}
	return errors.Join(errs...)
}

// checkEdges checks that edges join nodes of an index of n.
func checkEdges(es []graphops.Edge, n int) error {
	for _, e := range es {
		if e.Src < 0 || int(e.Src) >= n || e.Dst < 0 || int(e.Dst) >= n {
			return fmt.Errorf("edge %d→%d outside %d nodes", e.Src, e.Dst, n)
		}
	}
	return nil
}

// Empty reports whether nothing was built.
func (b *Built) Empty() bool { return b == nil || len(b.Sections)+len(b.Kinds) == 0 }

// WithBuilt returns an index that is ix with what a refresh built: edge
// kinds' edges in place of their stale ones, and sections in place of
// earlier or stale ones of their names, each loaded by its type's Load as
// Open would load it. A section that does not load is left out (stale
// still) and named in the error; put names what went in (sections, then
// kinds as KindLabel names them). ix is not changed; the result shares
// its data (ix must stay open while it is used; closing the result leaves
// ix open), and an index applied from it copies ix's arrays rather than
// appending to them.
func (ix *Index) WithBuilt(b *Built) (*Index, []string, error) {
	out, put, err := ix.WithSections(b.Sections...)
	if len(b.Kinds) > 0 {
		if gerr := out.putKinds(b.Kinds); gerr != nil {
			return out, put, errors.Join(err, gerr)
		}
		for _, k := range b.Kinds {
			put = append(put, KindLabel(k.Kind))
		}
	}
	return out, put, err
}

// putKinds replaces the edges of the built kinds in ix's graph.
func (ix *Index) putKinds(kinds []BuiltKind) error {
	rels := relationTable{Relations: slices.Clone(ix.rels.Relations), Kinds: slices.Clone(ix.rels.Kinds)}
	replaced := map[string]bool{}
	for _, k := range kinds {
		replaced[k.Kind] = true
	}
	var edges []graphops.Edge
	g := &ix.Graph().Out
	for u := range ix.N() {
		for p := g.Ptr[u]; p < g.Ptr[u+1]; p++ {
			if !replaced[rels.Kinds[g.Rel[p]]] {
				edges = append(edges, graphops.Edge{Src: int32(u), Dst: g.Idx[p], W: g.W[p], Rel: g.Rel[p]})
			}
		}
	}
	for _, k := range kinds {
		rel := rels.id(k.Kind, k.Kind) // as SetGraph names them
		for _, e := range k.Edges {
			e.Rel = rel
			edges = append(edges, e)
		}
	}
	gr, err := graphops.Build(ix.N(), edges, true)
	if err != nil {
		return fmt.Errorf("index: the refreshed graph: %w", err)
	}
	ix.graph, ix.rels = flatGraph(gr), rels
	ix.Meta.Edges, ix.Meta.Relations, ix.Meta.GraphKinds = len(edges), len(rels.Relations), rels.kindList()
	for _, k := range kinds {
		ix.Meta.Stale = ix.Meta.Stale.without("", k.Kind)
	}
	return nil
}

// WithSections is WithBuilt for sections alone.
func (ix *Index) WithSections(built ...*BuiltSection) (*Index, []string, error) {
	out := ix.successor()
	out.sections = maps.Clone(ix.sections)
	out.Meta.Sections = maps.Clone(ix.Meta.Sections)
	if out.sections == nil {
		out.sections = map[string]loaded{}
	}
	if out.Meta.Sections == nil {
		out.Meta.Sections = map[string]SectionRecord{}
	}
	var put []string
	var errs []error
	for _, b := range built {
		if err := out.putSection(b); err != nil {
			errs = append(errs, err)
			continue
		}
		put = append(put, b.Name)
	}
	return out, put, errors.Join(errs...)
}

// putSection writes b's files into memory and loads them.
func (ix *Index) putSection(b *BuiltSection) error {
	t, ok := LookupSection(b.Name)
	if !ok {
		return fmt.Errorf("index: section %q is not registered", b.Name)
	}
	raw, err := json.Marshal(b.Meta)
	if err != nil {
		return fmt.Errorf("index: section %q: its description: %w", b.Name, err)
	}
	mem := memFiles{}
	sw := &SectionWriter{mem: mem, name: b.Name}
	if err := b.Write(sw); err != nil {
		return fmt.Errorf("index: section %q: %w", b.Name, err)
	}
	rec := SectionRecord{Version: t.Version, Update: t.Update, Files: sw.files, Meta: raw}
	val, err := t.Load(ix, &SectionReader{ix: ix, name: b.Name, rec: rec, mem: mem})
	if err != nil {
		return fmt.Errorf("index: section %q (%s), built in memory, does not load: %w", b.Name, t.Summary, err)
	}
	ix.sections[b.Name] = loaded{val: val, mem: mem}
	ix.Meta.Sections[b.Name] = rec
	ix.Meta.Stale = ix.Meta.Stale.without(b.Name, "")
	return nil
}

// successor is a new index over ix's data, borrowing its mapping. It
// does not take ix's tail (an index applied from it copies): ix may still
// be the one its owner applies the next change to.
func (ix *Index) successor() *Index {
	return &Index{Dir: ix.Dir, Meta: ix.Meta, Manifest: ix.Manifest, graph: ix.graph, Postings: ix.Postings, BM25: ix.BM25,
		LSA: ix.LSA, Vectors: ix.Vectors, Embedder: ix.Embedder, rels: ix.rels, sections: ix.sections,
		r: ix.r, strs: ix.strs, off: ix.off, docStrs: ix.docStrs, docOff: ix.docOff, spans: ix.spans, borrowed: true,
		dead: ix.dead, ndead: ix.ndead}
}

// writeMem writes a section's files held in memory to w.
func writeMem(w *store.Writer, name string, v any) error {
	switch a := v.(type) {
	case []float32:
		return w.F32(name, a)
	case []uint32:
		return w.U32(name, a)
	case []int32:
		return w.I32(name, a)
	case []int64:
		return w.I64(name, a)
	case []byte:
		return w.Bytes(name, a)
	case jsonDoc:
		return w.Stream(name, store.KindJSON, func(out io.Writer) error { _, err := out.Write(a); return err })
	}
	return fmt.Errorf("index: section file %s: %T held in memory", name, v)
}

// memBytes is the size of a file held in memory.
func memBytes(v any) int64 {
	switch a := v.(type) {
	case []float32:
		return 4 * int64(len(a))
	case []uint32:
		return 4 * int64(len(a))
	case []int32:
		return 4 * int64(len(a))
	case []int64:
		return 8 * int64(len(a))
	case []byte:
		return int64(len(a))
	case jsonDoc:
		return int64(len(a))
	}
	return 0
}
