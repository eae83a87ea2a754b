package index

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/models"
)

// Tri-Graph files (docs/index-format.md).
const (
	fTGEntities  = "trigraph_entities.bytes"
	fTGEntOff    = "trigraph_entities_off.i64"
	fTGSentences = "trigraph_sentences.bytes"
	fTGSentOff   = "trigraph_sentences_off.i64"
	fTGEntVec    = "trigraph_entity_vectors.f32"
	fTGSentVec   = "trigraph_sentence_vectors.f32"
)

// tgCSRs names the Tri-Graph's CSR files: prefix_ptr.i64, prefix_idx.i32
// and, when weighted, prefix_w.f32.
var tgCSRs = []struct {
	prefix   string
	weighted bool
	get      func(*graphops.TriGraph) *graphops.CSR
}{
	{"trigraph_ent_sents", false, func(t *graphops.TriGraph) *graphops.CSR { return &t.EntSents }},
	{"trigraph_sent_ents", false, func(t *graphops.TriGraph) *graphops.CSR { return &t.SentEnts }},
	{"trigraph_pass_ents", true, func(t *graphops.TriGraph) *graphops.CSR { return &t.PassEnts }},
	{"trigraph_occur", true, func(t *graphops.TriGraph) *graphops.CSR { return &t.Occur }},
	{"trigraph_neighbours", true, func(t *graphops.TriGraph) *graphops.CSR { return &t.W }},
}

// triGraphFiles lists every Tri-Graph file (what SetTriGraph replaces).
func triGraphFiles() []string {
	fs := []string{fTGEntities, fTGEntOff, fTGSentences, fTGSentOff, fTGEntVec, fTGSentVec}
	for _, c := range tgCSRs {
		fs = append(fs, c.prefix+"_ptr.i64", c.prefix+"_idx.i32")
		if c.weighted {
			fs = append(fs, c.prefix+"_w.f32")
		}
	}
	return fs
}

// SetTriGraph builds the Tri-Graph of the index at dir and stores it in
// the index, replacing any previous one; the rewrite is atomic (a crash
// leaves the old index). The index's embedder embeds entities and
// sentences: an index built with --bi-encoder must be opened with it, so
// pass it as e (nil: the index's own, LSA).
func SetTriGraph(ctx context.Context, dir string, e models.Embedder, o TriGraphOptions) (*TriGraphMeta, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	ix, err := openWithEmbedder(dir, e)
	if err != nil {
		return nil, err
	}
	defer ix.Close()
	tg, err := BuildTriGraph(ctx, ix, o)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	meta := ix.Meta
	meta.TriGraph = &tg.Meta
	o.Progress.Stage("write", 0)
	defer o.Progress.Finish()
	return &tg.Meta, ix.rewrite(dir, triGraphFiles(), tg.write, meta)
}

// openWithEmbedder opens the index at dir for a rewrite that embeds new
// text, with e as its embedder when given (it must be the one the index's
// vectors came from).
func openWithEmbedder(dir string, e models.Embedder) (*Index, error) {
	ix, err := Open(dir, store.OpenOptions{})
	if err != nil {
		return nil, err
	}
	if e != nil {
		if e.Name() != ix.Meta.Embedder || e.Dim() != ix.Meta.Dims {
			ix.Close()
			return nil, fmt.Errorf("index %s: vectors come from embedder %q (%d dims), not %q (%d dims)", dir, ix.Meta.Embedder, ix.Meta.Dims, e.Name(), e.Dim())
		}
		ix.Embedder = e
	}
	return ix, nil
}

// write stores the Tri-Graph's arrays.
func (t *TriGraph) write(w *store.Writer) error {
	errs := []error{
		writeStrings(w, fTGEntities, fTGEntOff, t.Entities),
		writeStrings(w, fTGSentences, fTGSentOff, t.SentenceText),
		w.F32(fTGEntVec, t.EntityVecs), w.F32(fTGSentVec, t.SentenceVecs),
	}
	for _, c := range tgCSRs {
		g := c.get(t.TriGraph)
		errs = append(errs, w.I64(c.prefix+"_ptr.i64", g.Ptr), w.I32(c.prefix+"_idx.i32", g.Idx))
		if c.weighted {
			errs = append(errs, w.F32(c.prefix+"_w.f32", g.W))
		}
	}
	return errors.Join(errs...)
}

// writeStrings stores strings as one blob plus n+1 offsets.
func writeStrings(w *store.Writer, blob, offs string, ss []string) error {
	off := make([]int64, 1, len(ss)+1)
	var b strings.Builder
	for _, s := range ss {
		b.WriteString(s)
		off = append(off, int64(b.Len()))
	}
	return errors.Join(w.Bytes(blob, []byte(b.String())), w.I64(offs, off))
}

// loadTriGraph maps the Tri-Graph when the manifest describes one.
func (ix *Index) loadTriGraph() error {
	m := ix.Meta.TriGraph
	if m == nil {
		return nil
	}
	tg := &TriGraph{TriGraph: &graphops.TriGraph{Passages: ix.N(), Sentences: m.Sentences}, Meta: *m}
	var errs []error
	get := func(name string) []int64 { v, err := ix.r.I64(name); errs = append(errs, err); return v }
	get32 := func(name string) []int32 { v, err := ix.r.I32(name); errs = append(errs, err); return v }
	getF := func(name string) []float32 { v, err := ix.r.F32(name); errs = append(errs, err); return v }
	for _, c := range tgCSRs {
		g := c.get(tg.TriGraph)
		g.Ptr, g.Idx = get(c.prefix+"_ptr.i64"), get32(c.prefix+"_idx.i32")
		if c.weighted {
			g.W = getF(c.prefix + "_w.f32")
		}
	}
	tg.EntityVecs, tg.SentenceVecs = getF(fTGEntVec), getF(fTGSentVec)
	ents, err := ix.readStrings(fTGEntities, fTGEntOff, m.Entities)
	errs = append(errs, err)
	tg.sentBlob, err = ix.r.Bytes(fTGSentences)
	errs = append(errs, err)
	tg.sentOff = get(fTGSentOff)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tri-graph: %w", err)
	}
	tg.Entities = ents
	if err := tg.check(ix.Meta.Dims); err != nil {
		return err
	}
	ix.TriGraph = tg
	return nil
}

// check validates the arrays' shapes against the manifest.
func (t *TriGraph) check(dims int) error {
	ne, ns := len(t.Entities), t.Sentences
	switch {
	case ne != t.Meta.Entities:
		return fmt.Errorf("%s: %d entity strings, the manifest says %d", fTGEntities, ne, t.Meta.Entities)
	case len(t.EntityVecs) != ne*dims:
		return fmt.Errorf("%s: %d values for %d entities of %d dims", fTGEntVec, len(t.EntityVecs), ne, dims)
	case len(t.SentenceVecs) != ns*dims:
		return fmt.Errorf("%s: %d values for %d sentences of %d dims", fTGSentVec, len(t.SentenceVecs), ns, dims)
	case len(t.sentOff) != ns+1 || t.sentOff[0] != 0 || t.sentOff[ns] != int64(len(t.sentBlob)):
		return fmt.Errorf("%s: offsets do not match %d sentences", fTGSentOff, ns)
	}
	for i := 0; i < ns; i++ {
		if t.sentOff[i] > t.sentOff[i+1] {
			return fmt.Errorf("%s: offsets decrease at %d", fTGSentOff, i)
		}
	}
	return t.Validate()
}

// readStrings reads n strings stored by writeStrings.
func (ix *Index) readStrings(blob, offs string, n int) ([]string, error) {
	b, err := ix.r.Bytes(blob)
	if err != nil {
		return nil, err
	}
	off, err := ix.r.I64(offs)
	if err != nil {
		return nil, err
	}
	if len(off) != n+1 || off[0] != 0 || off[n] != int64(len(b)) {
		return nil, fmt.Errorf("%s: offsets do not match %d strings", offs, n)
	}
	out := make([]string, n)
	for i := range out {
		if off[i] > off[i+1] {
			return nil, fmt.Errorf("%s: offsets decrease at %d", offs, i)
		}
		out[i] = string(b[off[i]:off[i+1]])
	}
	return out, nil
}

// Sentence returns the text of sentence i.
func (t *TriGraph) Sentence(i int) string {
	if t.SentenceText != nil {
		return t.SentenceText[i]
	}
	return string(t.sentBlob[t.sentOff[i]:t.sentOff[i+1]])
}
