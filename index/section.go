package index

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gleaner-rag/gleaner/corpus/store"
)

// A section is one structure a method (or the index's own reranking)
// derives from the index and keeps inside it: NexusRAG's Tri-Graph,
// KET-RAG's skeleton, a trained SeedER encoder, the lexical head, stored
// token ids. Each has a registered SectionType that reads it; its files
// sit in the index folder named "<section>.<file>", are checksummed like
// every other file, and are listed with the section's version, update
// policy and description in the manifest (Meta.Sections).

// UpdatePolicy says what becomes of a section when the index's nodes
// change (a rebuild from a new corpus today; live updates later).
type UpdatePolicy string

// The update policies.
const (
	// Rebuild: the section is derived from the whole index and must be
	// built again when the nodes change (Build warns, naming the command).
	Rebuild UpdatePolicy = "rebuild"
	// Incremental: the section follows node changes by itself.
	Incremental UpdatePolicy = "incremental"
)

// SectionType describes one kind of section. Method packages register
// theirs in init (RegisterSection).
type SectionType struct {
	Name    string // lowercase letters, digits and '-': the prefix of its files
	Version int    // ≥ 1; bump it when the files' meaning changes
	Update  UpdatePolicy
	Summary string // what it holds, for `gleaner index info` and errors
	Hint    string // how to build it ("gleaner graph build --kind trigraph --index <dir>")
	// Load reads and checks the section's files (every size and cross-
	// reference the section's users rely on); its value is what
	// Index.Section returns. Arrays may alias the index's mapping.
	Load func(ix *Index, r *SectionReader) (any, error)
	// Refresh, when set, builds the section again from an index held in
	// memory, with the settings it was built with (settings: its
	// description then), so that a live writer can bring a stale section
	// back without a command (refresh.go). nil: only its build command
	// does.
	Refresh func(ctx context.Context, ix *Index, settings json.RawMessage, env RefreshEnv) (*BuiltSection, error)
	// CanRefresh, when set, says why Refresh cannot build the section
	// from ix with these settings (nil: it can), without building it.
	CanRefresh func(ix *Index, settings json.RawMessage) error
	// FromVectors says the section is derived from the index's vectors or
	// its text embedder: a refit of the LSA basis (Index.Refit) leaves it
	// stale.
	FromVectors bool
}

// SectionRecord is a section's entry in the manifest.
type SectionRecord struct {
	Version int             `json:"version"`
	Update  UpdatePolicy    `json:"update"`
	Files   []string        `json:"files"`
	Meta    json.RawMessage `json:"meta,omitempty"`
}

var (
	sectionMu    sync.RWMutex
	sectionTypes = map[string]SectionType{}
	sectionName  = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	sectionFile  = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)
)

// RegisterSection adds a section type; a bad or duplicate name is an error.
func RegisterSection(t SectionType) error {
	switch {
	case !sectionName.MatchString(t.Name):
		return fmt.Errorf("index: section name %q: use lowercase letters, digits and '-'", t.Name)
	case t.Version < 1 || t.Load == nil:
		return fmt.Errorf("index: section %q: a version ≥ 1 and a Load function are required", t.Name)
	case t.Update != Rebuild && t.Update != Incremental:
		return fmt.Errorf("index: section %q: update policy %q, want %q or %q", t.Name, t.Update, Rebuild, Incremental)
	}
	for _, f := range coreFiles {
		if strings.HasPrefix(f, t.Name+".") {
			return fmt.Errorf("index: section name %q clashes with the index's file %s", t.Name, f)
		}
	}
	sectionMu.Lock()
	defer sectionMu.Unlock()
	if _, dup := sectionTypes[t.Name]; dup {
		return fmt.Errorf("index: section %q registered twice", t.Name)
	}
	sectionTypes[t.Name] = t
	return nil
}

// MustRegisterSection panics on a registration error (for init).
func MustRegisterSection(t SectionType) {
	if err := RegisterSection(t); err != nil {
		panic(err)
	}
}

// LookupSection returns the registered type called name.
func LookupSection(name string) (SectionType, bool) {
	sectionMu.RLock()
	defer sectionMu.RUnlock()
	t, ok := sectionTypes[name]
	return t, ok
}

// ErrNotBuilt marks what an index lacks (a section, edges of a kind):
// the caller's to build, not a fault of the index or the server.
var ErrNotBuilt = errors.New("not built")

// MissingError says what an index lacks and how to build it; it is an
// ErrNotBuilt.
type MissingError struct {
	What string // "a Tri-Graph"
	Hint string // the command or call that builds it
}

func (e *MissingError) Error() string {
	if e.Hint == "" {
		return "the index has no " + e.What
	}
	return "the index has no " + e.What + ": " + e.Hint
}

// Is makes every MissingError an ErrNotBuilt, and equal to another that
// says the same (a package's sentinel, made from its section's type).
func (e *MissingError) Is(target error) bool {
	t, ok := target.(*MissingError)
	return target == ErrNotBuilt || (ok && *t == *e)
}

// StaleError says that a section or edge kind no longer matches the
// index's nodes (they changed since it was built) and how to rebuild it;
// it is an ErrNotBuilt, so callers treat it as missing.
type StaleError struct {
	What    string // "a Tri-Graph", "mentions edges"
	Hint    string
	Changes int64
}

func (e *StaleError) Error() string {
	s := fmt.Sprintf("the index's %s is stale: %d change(s) to its nodes since it was built", e.What, e.Changes)
	if e.Hint != "" {
		s += "; build it again: " + e.Hint
	}
	return s
}

// Is makes every StaleError an ErrNotBuilt.
func (e *StaleError) Is(target error) bool { return target == ErrNotBuilt }

// loaded is a section as Open left it: its value, or why it is unusable.
type loaded struct {
	val any
	err error
	mem memFiles // a section built in memory (refresh.go): its files
}

// Section returns the loaded value of the section called name: a
// *MissingError when the index has none, or the reason it cannot be used
// (an unknown type, another version, arrays that do not fit).
func (ix *Index) Section(name string) (any, error) {
	if s, ok := ix.sections[name]; ok {
		return s.val, s.err
	}
	t, ok := LookupSection(name)
	if st := ix.Meta.Stale; st != nil && slices.Contains(st.Sections, name) {
		what := t.Summary
		if what == "" {
			what = fmt.Sprintf("section %q", name)
		}
		hint := t.Hint
		if slices.Contains(ix.refreshableSections(), name) {
			hint = "gleaner refresh --index <dir> builds it again with its settings, as a server with --writes does when the writes pause; or " + hint
		}
		return nil, &StaleError{What: what, Hint: hint, Changes: st.Changes}
	}
	if !ok {
		return nil, &MissingError{What: fmt.Sprintf("section %q", name)}
	}
	return nil, &MissingError{What: t.Summary, Hint: t.Hint}
}

// SectionStatus describes one section of an opened index.
type SectionStatus struct {
	Name    string
	Record  SectionRecord
	Bytes   int64
	Summary string
	Err     error // why it cannot be used, or nil
}

// Sections describes the index's sections, sorted by name.
func (ix *Index) Sections() []SectionStatus {
	var out []SectionStatus
	for name, rec := range ix.Meta.Sections {
		st := SectionStatus{Name: name, Record: rec, Err: ix.sections[name].err}
		if t, ok := LookupSection(name); ok {
			st.Summary = t.Summary
		}
		for _, f := range rec.Files {
			if mem := ix.sections[name].mem; mem != nil {
				st.Bytes += memBytes(mem[f])
				continue
			}
			st.Bytes += ix.Manifest.Files[f].Bytes
		}
		out = append(out, st)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// loadSections loads every section the manifest lists. A section that
// cannot be used does not stop the index opening (other methods still
// work, and the section can be rebuilt): Section reports why.
func (ix *Index) loadSections() error {
	ix.sections = map[string]loaded{}
	for name, rec := range ix.Meta.Sections {
		for _, f := range rec.Files {
			if !strings.HasPrefix(f, name+".") || !ix.r.Has(f) {
				return fmt.Errorf("section %q lists %s, which is not its file in the manifest", name, f)
			}
		}
		val, err := ix.loadSection(name, rec)
		ix.sections[name] = loaded{val: val, err: err}
	}
	return nil
}

func (ix *Index) loadSection(name string, rec SectionRecord) (any, error) {
	t, ok := LookupSection(name)
	if !ok {
		return nil, fmt.Errorf("index %s: section %q: this program does not know it (it links none of the methods that read it)", ix.Dir, name)
	}
	if rec.Version != t.Version {
		return nil, fmt.Errorf("index %s: %s was written as version %d of section %q, this gleaner reads version %d: build it again (%s): %w",
			ix.Dir, t.Summary, rec.Version, name, t.Version, t.Hint, store.ErrVersion)
	}
	v, err := t.Load(ix, &SectionReader{ix: ix, name: name, rec: rec})
	if err != nil {
		return nil, fmt.Errorf("index %s: section %q (%s) cannot be used: %v; build it again (%s): %w", ix.Dir, name, t.Summary, err, t.Hint, store.ErrCorrupt)
	}
	return v, nil
}

// SectionReader reads one section's files and description.
type SectionReader struct {
	ix   *Index
	name string
	rec  SectionRecord
	mem  memFiles // nil: the index's store
}

// file is the store name of the section's file f.
func (r *SectionReader) file(f string) string { return r.name + "." + f }

// Meta decodes the section's description into v.
func (r *SectionReader) Meta(v any) error {
	if len(r.rec.Meta) == 0 {
		return fmt.Errorf("section %q has no description", r.name)
	}
	return json.Unmarshal(r.rec.Meta, v)
}

// Has reports whether the section has file f.
func (r *SectionReader) Has(f string) bool { return slices.Contains(r.rec.Files, r.file(f)) }

// F32, U32, I32, I64 and Bytes return one of the section's arrays.
func (r *SectionReader) F32(f string) ([]float32, error) {
	return sectionRead(r, f, (*store.Reader).F32)
}
func (r *SectionReader) U32(f string) ([]uint32, error) {
	return sectionRead(r, f, (*store.Reader).U32)
}
func (r *SectionReader) I32(f string) ([]int32, error) { return sectionRead(r, f, (*store.Reader).I32) }
func (r *SectionReader) I64(f string) ([]int64, error) { return sectionRead(r, f, (*store.Reader).I64) }
func (r *SectionReader) Bytes(f string) ([]byte, error) {
	return sectionRead(r, f, (*store.Reader).Bytes)
}

// JSON decodes the section's JSON file f into v.
func (r *SectionReader) JSON(f string, v any) error {
	if r.mem == nil {
		return r.ix.r.JSON(r.file(f), v)
	}
	doc, err := sectionRead(r, f, func(*store.Reader, string) (jsonDoc, error) { return nil, nil })
	if err != nil {
		return err
	}
	return json.Unmarshal(doc, v)
}

// sectionRead reads file f from the index's store, or from memory.
func sectionRead[T any](r *SectionReader, f string, read func(*store.Reader, string) (T, error)) (T, error) {
	name := r.file(f)
	if r.mem == nil {
		return read(r.ix.r, name)
	}
	v, ok := r.mem[name].(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("section %q has no %T file %s", r.name, zero, name)
	}
	return v, nil
}

// Strings reads n strings stored by SectionWriter.Strings as f; they
// alias the mapping.
func (r *SectionReader) Strings(f string, n int) (Strings, error) {
	blob, err := r.Bytes(f + ".bytes")
	if err != nil {
		return Strings{}, err
	}
	off, err := r.I64(f + "_off.i64")
	if err != nil {
		return Strings{}, err
	}
	s := Strings{blob: blob, off: off}
	return s, s.check(n)
}

// SectionWriter writes one section's files.
type SectionWriter struct {
	w     *store.Writer
	mem   memFiles // nil: write to w
	name  string
	files []string
}

func (w *SectionWriter) add(f string) (string, error) {
	if !sectionFile.MatchString(f) {
		return "", fmt.Errorf("index: section %q: file name %q: use lowercase letters, digits, '_', '.' and '-'", w.name, f)
	}
	name := w.name + "." + f
	if slices.Contains(w.files, name) {
		return "", fmt.Errorf("index: section %q writes %s twice", w.name, f)
	}
	w.files = append(w.files, name)
	return name, nil
}

// F32, U32, I32, I64 and Bytes write one array file each.
func (w *SectionWriter) F32(f string, v []float32) error {
	return sectionWrite(w, f, v, (*store.Writer).F32)
}
func (w *SectionWriter) U32(f string, v []uint32) error {
	return sectionWrite(w, f, v, (*store.Writer).U32)
}
func (w *SectionWriter) I32(f string, v []int32) error {
	return sectionWrite(w, f, v, (*store.Writer).I32)
}
func (w *SectionWriter) I64(f string, v []int64) error {
	return sectionWrite(w, f, v, (*store.Writer).I64)
}
func (w *SectionWriter) Bytes(f string, v []byte) error {
	return sectionWrite(w, f, v, (*store.Writer).Bytes)
}

// JSON writes v as a JSON document.
func (w *SectionWriter) JSON(f string, v any) error {
	if w.mem == nil {
		return sectionWrite(w, f, v, (*store.Writer).JSON)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("index: section %q: %s: %w", w.name, f, err)
	}
	return sectionWrite(w, f, jsonDoc(b), nil)
}

// sectionWrite adds file f to the store, or keeps it in memory.
func sectionWrite[T any](w *SectionWriter, f string, v T, write func(*store.Writer, string, T) error) error {
	name, err := w.add(f)
	if err != nil {
		return err
	}
	if w.mem != nil {
		w.mem[name] = v
		return nil
	}
	return write(w.w, name, v)
}

// Strings writes ss as one blob (f.bytes) and n+1 offsets (f_off.i64),
// read back by SectionReader.Strings.
func (w *SectionWriter) Strings(f string, ss []string) error { return w.Packed(f, PackStrings(ss)) }

// Packed writes strings already packed, as Strings does.
func (w *SectionWriter) Packed(f string, p Strings) error {
	return errors.Join(w.Bytes(f+".bytes", p.blob), w.I64(f+"_off.i64", p.off))
}

// SetSection computes nothing: it stores a section built elsewhere in the
// index at dir, replacing any earlier one of that name, by an atomic
// rewrite (a crash leaves the old index). meta is the section's
// description; write writes its files.
func SetSection(ctx context.Context, dir, name string, meta any, write func(*SectionWriter) error) error {
	return SetSectionFunc(ctx, dir, func(ix *Index) error { return ix.StoreSection(ctx, dir, name, meta, write) })
}

// StoreSection is SetSection from an index opened earlier (the one the
// section was built from): when another writer replaced the index at dir
// since, it fails with ErrChanged rather than dropping that writer's work.
func (ix *Index) StoreSection(ctx context.Context, dir, name string, meta any, write func(*SectionWriter) error) error {
	t, ok := LookupSection(name)
	if !ok {
		return fmt.Errorf("index: section %q is not registered", name)
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("index: section %q: its description: %w", name, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m := ix.Meta
	m.Sections = make(map[string]SectionRecord, len(ix.Meta.Sections)+1)
	for k, v := range ix.Meta.Sections {
		m.Sections[k] = v
	}
	m.Stale = m.Stale.without(name, "")
	var drop []string
	if old, ok := ix.Meta.Sections[name]; ok {
		drop = old.Files
	}
	return ix.rewrite(dir, drop, func(w *store.Writer) error {
		sw := &SectionWriter{w: w, name: name}
		if err := write(sw); err != nil {
			return err
		}
		m.Sections[name] = SectionRecord{Version: t.Version, Update: t.Update, Files: sw.files, Meta: raw}
		return nil
	}, &m)
}

// DropSection removes a section from the index at dir (atomically).
func DropSection(ctx context.Context, dir, name string) error {
	ix, err := Open(dir, store.OpenOptions{})
	if err != nil {
		return err
	}
	defer ix.Close()
	rec, ok := ix.Meta.Sections[name]
	if !ok {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m := ix.Meta
	m.Stale = m.Stale.without(name, "")
	m.Sections = map[string]SectionRecord{}
	for k, v := range ix.Meta.Sections {
		if k != name {
			m.Sections[k] = v
		}
	}
	return ix.rewrite(dir, rec.Files, func(*store.Writer) error { return nil }, &m)
}

// Strings are n strings stored as one blob and n+1 offsets.
type Strings struct {
	blob []byte
	off  []int64
}

// PackStrings packs ss.
func PackStrings(ss []string) Strings {
	off := make([]int64, 1, len(ss)+1)
	var b strings.Builder
	for _, s := range ss {
		b.WriteString(s)
		off = append(off, int64(b.Len()))
	}
	return Strings{blob: []byte(b.String()), off: off}
}

// Len is the number of strings.
func (s Strings) Len() int { return max(len(s.off)-1, 0) }

// At returns string i (a copy).
func (s Strings) At(i int) string { return string(s.blob[s.off[i]:s.off[i+1]]) }

// check verifies n strings' offsets: from 0, non-decreasing, to the end.
func (s Strings) check(n int) error {
	if n < 0 || len(s.off) != n+1 || s.off[0] != 0 || s.off[n] != int64(len(s.blob)) {
		return fmt.Errorf("string offsets do not match %d strings", n)
	}
	for i := 0; i < n; i++ {
		if s.off[i] > s.off[i+1] {
			return fmt.Errorf("string offsets decrease at %d", i)
		}
	}
	return nil
}

// SetSectionFunc opens the index at dir and runs store on it (which calls
// StoreSection), closing it after: for section writers that check the
// opened index before writing.
func SetSectionFunc(ctx context.Context, dir string, write func(*Index) error) error {
	ix, err := Open(dir, store.OpenOptions{})
	if err != nil {
		return err
	}
	defer ix.Close()
	if err := ctx.Err(); err != nil {
		return err
	}
	return write(ix)
}
