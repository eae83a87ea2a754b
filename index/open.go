package index

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/internal/memo"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/lexical"
)

// Index is an opened, memory-mapped index. It is immutable and safe for
// concurrent use; arrays it hands out are valid until Close.
type Index struct {
	Dir      string
	Meta     Meta
	Manifest store.Manifest
	graph    *graphState // Graph()
	Postings *lexical.Postings
	BM25     *lexical.BM25
	LSA      *lexical.LSA    // nil unless the embedder is lsa
	Vectors  []float32       // Meta.Nodes × Meta.Dims, row-major
	Embedder models.Embedder // embeds query text; nil for an external embedder not supplied to OpenWith
	rels     relationTable
	sections map[string]loaded

	r        *store.Reader
	strs     []byte
	off      []int64
	docStrs  []byte // provenance (docs.go); nil when the index has none
	docOff   []int64
	spans    []int64
	docsOnce sync.Once
	docs     *docCounts // passages per document cut into passages
	idsOnce  sync.Once
	ids      *idTable
	dead     []uint64 // deleted nodes' bits (deleted.go); nil: none
	ndead    int
	viewMu   sync.Mutex
	views    map[string]*graphops.Adjacency
	devMu    sync.Mutex
	devBufs  map[boundKey]engine.Buffer
	memo     memo.Map
	// borrowed: r belongs to the index this one was applied from (Apply),
	// which closes it.
	borrowed bool
	// tail: the next index applied from this one may append to its
	// arrays in place (Apply; taken by the first).
	tail atomic.Bool
}

// VectorsOn returns the node vectors as a buffer of backend b (bound once
// per backend: the CPU uses the mapped matrix in place, a device gets one
// upload). The buffer lives as long as the index. A queue view
// (engine.OnQueue) gets its backend's buffer (engine.Root), which every
// view may read.
func (ix *Index) VectorsOn(b engine.Backend) (engine.Buffer, error) {
	return ix.BindOn(b, "vectors", ix.Vectors)
}

// BindOn returns data (an array of the index or of one of its sections,
// named by key) as a read-only buffer of backend b, bound once per backend
// and key and freed when the index closes; see VectorsOn.
func (ix *Index) BindOn(b engine.Backend, key string, data []float32) (engine.Buffer, error) {
	b = engine.Root(b)
	ix.devMu.Lock()
	defer ix.devMu.Unlock()
	k := boundKey{b, key}
	if buf, ok := ix.devBufs[k]; ok {
		return buf, nil
	}
	buf, err := b.Bind(data)
	if err != nil {
		return nil, fmt.Errorf("index: %s on %s: %w", key, b.Name(), err)
	}
	if ix.devBufs == nil {
		ix.devBufs = map[boundKey]engine.Buffer{}
	}
	ix.devBufs[k] = buf
	return buf, nil
}

// boundKey names a buffer BindOn made.
type boundKey struct {
	b   engine.Backend
	key string
}

// Open maps the index at dir, verifying format version, sizes and
// checksums (see store.OpenOptions) and the consistency of its arrays.
func Open(dir string, opt store.OpenOptions) (ix *Index, err error) {
	r, err := store.Open(dir, opt)
	if err != nil {
		return nil, err
	}
	ix = &Index{Dir: dir, r: r, Manifest: r.Manifest}
	defer func() {
		if err != nil {
			r.Close()
			ix = nil
		}
	}()
	if err := ix.readMeta(); err != nil {
		return nil, err
	}
	if err := ix.loadArrays(); err != nil {
		return nil, fmt.Errorf("%w %s: %v", store.ErrCorrupt, dir, err)
	}
	return ix, nil
}

// loadArrays reads and checks the index's arrays, then its sections
// (which may read any of them). The node store and the graph are checked
// beside the postings, whose lists are checked on every core; the vectors
// need the postings' terms. The first error in that order is returned.
func (ix *Index) loadArrays() error {
	var graphErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		graphErr = firstError(ix.loadNodes, ix.loadProvenance, ix.loadGraph)
	}()
	lexErr := firstError(ix.loadPostings, ix.loadVectors)
	<-done
	if err := cmp.Or(graphErr, lexErr); err != nil {
		return err
	}
	return ix.loadSections()
}

// firstError runs the steps in order and stops at the first error.
func firstError(steps ...func() error) error {
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func (ix *Index) readMeta() error {
	b, err := json.Marshal(ix.Manifest.Meta["index"])
	if err == nil {
		err = json.Unmarshal(b, &ix.Meta)
	}
	if err != nil || ix.Meta.Nodes <= 0 {
		return fmt.Errorf("%w %s: manifest has no valid index description", store.ErrCorrupt, ix.Dir)
	}
	return nil
}

// Close unmaps the index.
func (ix *Index) Close() error {
	ix.devMu.Lock()
	for k, buf := range ix.devBufs {
		k.b.Free(buf)
	}
	ix.devBufs = nil
	ix.devMu.Unlock()
	if ix.borrowed {
		return nil
	}
	return ix.r.Close()
}

func (ix *Index) loadNodes() (err error) {
	if ix.strs, err = ix.r.Bytes(fNodeStrings); err != nil {
		return err
	}
	if ix.off, err = ix.r.I64(fNodeOff); err != nil {
		return err
	}
	n := ix.Meta.Nodes
	if len(ix.off) != n*nodeFields+1 || ix.off[len(ix.off)-1] != int64(len(ix.strs)) {
		return fmt.Errorf("node store offsets do not match %d nodes", n)
	}
	for i := 1; i < len(ix.off); i++ {
		if ix.off[i] < ix.off[i-1] {
			return fmt.Errorf("node store offsets decrease at %d", i)
		}
	}
	return nil
}

func (ix *Index) loadGraph() error {
	var g graphops.Graph
	var errs []error
	get := func(c *graphops.CSR, ptr, idx, w, rel string) {
		var e1, e2, e3, e4 error
		c.Ptr, e1 = ix.r.I64(ptr)
		c.Idx, e2 = ix.r.I32(idx)
		c.W, e3 = ix.r.F32(w)
		c.Rel, e4 = ix.r.I32(rel)
		errs = append(errs, e1, e2, e3, e4)
	}
	get(&g.Out, fOutPtr, fOutIdx, fOutW, fOutRel)
	get(&g.In, fInPtr, fInIdx, fInW, fInRel)
	errs = append(errs, ix.r.JSON(fRelations, &ix.rels))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if c := g.Out.Rel; c == nil && len(g.Out.Idx) > 0 {
		return fmt.Errorf("graph relation ids missing")
	}
	for _, c := range []*graphops.CSR{&g.Out, &g.In} {
		if err := c.Validate(ix.Meta.Nodes); err != nil {
			return err
		}
		for _, r := range c.Rel {
			if r < 0 || int(r) >= len(ix.rels.Relations) {
				return fmt.Errorf("relation id %d outside the table of %d", r, len(ix.rels.Relations))
			}
		}
	}
	ix.graph = flatGraph(&g)
	return nil
}

func (ix *Index) loadPostings() error {
	p := &lexical.Postings{}
	var e [6]error
	p.Terms.Blob, e[0] = ix.r.Bytes(fTermBlob)
	p.Terms.Off, e[1] = ix.r.I64(fTermOff)
	p.Ptr, e[2] = ix.r.I64(fPostPtr)
	p.Doc, e[3] = ix.r.U32(fPostDoc)
	p.TF, e[4] = ix.r.U32(fPostTF)
	p.DocLen, e[5] = ix.r.U32(fDocLen)
	if err := errors.Join(e[:]...); err != nil {
		return err
	}
	if len(p.DocLen) != ix.Meta.Nodes || len(p.Terms.Off) == 0 || p.Terms.Off[len(p.Terms.Off)-1] != int64(len(p.Terms.Blob)) {
		return fmt.Errorf("bm25 arrays do not match %d nodes", ix.Meta.Nodes)
	}
	if err := p.Validate(); err != nil {
		return err
	}
	s, err := lexical.NewBM25(p, ix.BM25Params())
	if err != nil {
		return err
	}
	ix.Postings, ix.BM25 = p, s
	return nil
}

func (ix *Index) loadVectors() (err error) {
	if ix.Vectors, err = ix.r.F32(fVectors); err != nil {
		return err
	}
	if ix.Meta.Dims <= 0 || len(ix.Vectors) != ix.Meta.Nodes*ix.Meta.Dims {
		return fmt.Errorf("vectors hold %d floats, want %d×%d", len(ix.Vectors), ix.Meta.Nodes, ix.Meta.Dims)
	}
	switch ix.Meta.Embedder {
	case EmbedderLSA:
		return ix.loadLSA()
	case EmbedderPrecomputed:
		ix.Embedder = models.Precomputed{D: ix.Meta.Dims}
	}
	return nil
}

func (ix *Index) loadLSA() error {
	m := &lexical.LSA{Dims: ix.Meta.Dims}
	var e [3]error
	m.Row, e[0] = ix.r.I32(fLSARow)
	m.IDF, e[1] = ix.r.F32(fLSAIDF)
	m.V, e[2] = ix.r.F32(fLSAV)
	if err := errors.Join(e[:]...); err != nil {
		return err
	}
	emb := &lexical.LSAEmbedder{M: m, Terms: ix.Postings.Terms}
	if err := emb.Check(); err != nil {
		return err
	}
	ix.LSA, ix.Embedder = m, emb
	return nil
}

// OpenWith opens an index whose vectors were made by an external text
// embedder (see WithTextEmbedder), attaching e for query embedding. e must
// have the name and dimension recorded in the index.
func OpenWith(dir string, opt store.OpenOptions, e models.Embedder) (*Index, error) {
	ix, err := Open(dir, opt)
	if err != nil {
		return nil, err
	}
	if e.Name() != ix.Meta.Embedder || e.Dim() != ix.Meta.Dims {
		ix.Close()
		return nil, fmt.Errorf("index %s: vectors come from embedder %q (%d dims), not %q (%d dims)", dir, ix.Meta.Embedder, ix.Meta.Dims, e.Name(), e.Dim())
	}
	ix.Embedder = e
	return ix, nil
}

// N is the number of nodes.
func (ix *Index) N() int { return ix.Meta.Nodes }

func (ix *Index) field(i, f int) string { return stringAt(ix.strs, ix.off, i*nodeFields+f) }

// stringAt is string j of a blob cut at off (aliasing the map).
func stringAt(blob []byte, off []int64, j int) string {
	lo, hi := off[j], off[j+1]
	if lo == hi {
		return ""
	}
	return unsafe.String(&blob[lo], int(hi-lo))
}

// NodeID, Title, Text and Type return node i's fields (aliasing the map).
func (ix *Index) NodeID(i int) string { return ix.field(i, 0) }
func (ix *Index) Title(i int) string  { return ix.field(i, 1) }
func (ix *Index) Text(i int) string   { return ix.field(i, 2) }
func (ix *Index) Type(i int) string   { return ix.field(i, 3) }

// Aliases returns node i's aliases.
func (ix *Index) Aliases(i int) []string {
	if s := ix.field(i, 4); s != "" {
		return strings.Split(s, aliasSep)
	}
	return nil
}

// Lookup returns the internal number of a node id. The id table is built on
// first use.
func (ix *Index) Lookup(id string) (int32, bool) {
	return ix.idTable().lookup(id)
}

// Vector returns node i's vector (aliasing the map).
func (ix *Index) Vector(i int) []float32 {
	d := ix.Meta.Dims
	return ix.Vectors[i*d : (i+1)*d]
}

// RelationName returns the (kind, relation) pair of relation id r.
func (ix *Index) RelationName(r int32) (kind, rel string) {
	return ix.rels.Kinds[r], ix.rels.Relations[r]
}

// LSAFingerprint identifies the index's LSA basis (the checksums of its
// term rows, idf and V), so models trained on its term vectors can check
// that they meet the same basis; "" for an index without LSA.
func (ix *Index) LSAFingerprint() string {
	if ix.LSA == nil {
		return ""
	}
	f := ix.Manifest.Files
	return fmt.Sprintf("lsa:crc32c:%08x.%08x.%08x", f[fLSARow].CRC32C, f[fLSAIDF].CRC32C, f[fLSAV].CRC32C)
}

// Names lists every node's title and aliases (copies: they outlive the
// index), the gazetteer of the "titles" entity extractors; deleted nodes'
// are not.
func (ix *Index) Names() []string {
	var out []string
	for i := 0; i < ix.N(); i++ {
		if ix.IsDeleted(i) {
			continue
		}
		out = append(out, strings.Clone(ix.Title(i)))
		for _, a := range ix.Aliases(i) {
			out = append(out, strings.Clone(a))
		}
	}
	return out
}

// Scrub checks that every file the index serves still holds the bytes its
// manifest's checksums promise (store.Reader.Scrub): a mapped file
// rewritten in place is reported, naming it, rather than served.
func (ix *Index) Scrub() error { return ix.r.Scrub() }
