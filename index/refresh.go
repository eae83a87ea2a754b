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

// Refreshable names the index's stale sections that their types can
// build again in memory (SectionType.Refresh, and CanRefresh agrees),
// sorted.
func (ix *Index) Refreshable() []string {
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

// RefreshStale builds every refreshable stale section of ix again, in
// memory, with the settings it was built with. A section that fails is
// left stale and named in the error; the others are returned.
func RefreshStale(ctx context.Context, ix *Index, env RefreshEnv) ([]*BuiltSection, error) {
	if env.Backend == nil {
		return nil, errors.New("index: a refresh needs RefreshEnv.Backend (engine.Open)")
	}
	var built []*BuiltSection
	var errs []error
	for _, name := range ix.Refreshable() {
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
		built = append(built, b)
	}
	return built, errors.Join(errs...)
}

// WithSections returns an index that is ix with the built sections in
// place of earlier or stale ones of their names, each loaded by its
// type's Load as Open would load it; a section that does not load is left
// out (stale still) and named in the error. ix is not changed; the result
// shares its data (ix must stay open while it is used; closing the result
// leaves ix open), and an index applied from it copies ix's arrays rather
// than appending to them.
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
	return &Index{Dir: ix.Dir, Meta: ix.Meta, Manifest: ix.Manifest, Graph: ix.Graph, Postings: ix.Postings, BM25: ix.BM25,
		LSA: ix.LSA, Vectors: ix.Vectors, Embedder: ix.Embedder, rels: ix.rels, sections: ix.sections,
		r: ix.r, strs: ix.strs, off: ix.off, docStrs: ix.docStrs, docOff: ix.docOff, spans: ix.spans, borrowed: true}
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
