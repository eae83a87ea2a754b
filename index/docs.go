package index

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/store"
)

// Provenance files, written only when some node was cut from a document or
// carries metadata (an index of plain nodes has none, and every node is
// then its own document).
const (
	fNodeDoc    = "node_doc.bytes"   // per node: document id, section path, meta JSON
	fNodeDocOff = "node_doc_off.i64" // docFields offsets per node, plus one
	fNodeSpan   = "node_span.i64"    // per node: source byte start and end, −1 when unknown
	docFields   = 3
)

// hasProvenance reports whether any node needs the provenance files.
func hasProvenance(nodes []corpus.Node) bool {
	for i := range nodes {
		n := &nodes[i]
		if n.Doc != "" || n.Section != "" || n.Span != nil || len(n.Meta) > 0 {
			return true
		}
	}
	return false
}

// writeProvenance stores each node's document, section, metadata and span.
func writeProvenance(w *store.Writer, nodes []corpus.Node) error {
	if !hasProvenance(nodes) {
		return nil
	}
	off := make([]int64, 0, len(nodes)*docFields+1)
	off = append(off, 0)
	span := make([]int64, 0, 2*len(nodes))
	err := w.Stream(fNodeDoc, store.KindBytes, func(out io.Writer) error {
		var pos int64
		for i := range nodes {
			n := &nodes[i]
			meta, err := metaJSON(n.Meta)
			if err != nil {
				return fmt.Errorf("node %q: meta: %w", n.ID, err)
			}
			for _, s := range [docFields]string{n.Doc, n.Section, meta} {
				k, err := io.WriteString(out, s)
				if err != nil {
					return err
				}
				pos += int64(k)
				off = append(off, pos)
			}
			if n.Span != nil {
				span = append(span, int64(n.Span.Start), int64(n.Span.End))
			} else {
				span = append(span, -1, -1)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := w.I64(fNodeDocOff, off); err != nil {
		return err
	}
	return w.I64(fNodeSpan, span)
}

// MetaString is metadata as the index stores it ("" for none): JSON with
// sorted keys.
func MetaString(m map[string]any) (string, error) { return metaJSON(m) }

func metaJSON(m map[string]any) (string, error) {
	if len(m) == 0 {
		return "", nil
	}
	b, err := json.Marshal(m) // keys sorted: the same metadata is the same bytes
	return string(b), err
}

// loadProvenance maps the provenance files when the index has them.
func (ix *Index) loadProvenance() (err error) {
	if !ix.r.Has(fNodeDoc) {
		return nil
	}
	if ix.docStrs, err = ix.r.Bytes(fNodeDoc); err != nil {
		return err
	}
	if ix.docOff, err = ix.r.I64(fNodeDocOff); err != nil {
		return err
	}
	if ix.spans, err = ix.r.I64(fNodeSpan); err != nil {
		return err
	}
	n := ix.Meta.Nodes
	if len(ix.docOff) != n*docFields+1 || ix.docOff[len(ix.docOff)-1] != int64(len(ix.docStrs)) || len(ix.spans) != 2*n {
		return fmt.Errorf("node provenance does not match %d nodes", n)
	}
	for i := 1; i < len(ix.docOff); i++ {
		if ix.docOff[i] < ix.docOff[i-1] {
			return fmt.Errorf("node provenance offsets decrease at %d", i)
		}
	}
	return nil
}

func (ix *Index) docField(i, f int) string {
	if ix.docOff == nil {
		return ""
	}
	return stringAt(ix.docStrs, ix.docOff, i*docFields+f)
}

// Document is the id of the document node i was cut from: its own id when
// it is a document of its own.
func (ix *Index) Document(i int) string {
	if d := ix.docField(i, 0); d != "" {
		return d
	}
	return ix.NodeID(i)
}

// HeadingPath is node i's heading path in its document ("" when none).
func (ix *Index) HeadingPath(i int) string { return ix.docField(i, 1) }

// Span is node i's byte range in its source file; ok is false when unknown.
func (ix *Index) Span(i int) (start, end int, ok bool) {
	if ix.spans == nil || ix.spans[2*i] < 0 {
		return 0, 0, false
	}
	return int(ix.spans[2*i]), int(ix.spans[2*i+1]), true
}

// MetaJSON is node i's metadata as a JSON object ("" when it has none).
func (ix *Index) MetaJSON(i int) string { return ix.docField(i, 2) }

// NodeMeta decodes node i's metadata (nil when it has none).
func (ix *Index) NodeMeta(i int) (map[string]any, error) {
	s := ix.MetaJSON(i)
	if s == "" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("index %s: node %q: meta: %w", ix.Dir, ix.NodeID(i), err)
	}
	return m, nil
}

// HasDocuments reports whether some nodes were cut from larger documents
// or carry metadata.
func (ix *Index) HasDocuments() bool { return ix.docOff != nil }

// DocumentTitle is the title of node i's document: its title without the
// heading path importers append to a passage's title.
func (ix *Index) DocumentTitle(i int) string {
	t := ix.Title(i)
	if s := ix.HeadingPath(i); s != "" {
		t = strings.TrimSuffix(t, corpus.SectionSep+s)
	}
	return t
}

// DocumentSize is the number of passages of document id (0: none).
func (ix *Index) DocumentSize(id string) int {
	if n := ix.docCounts().count(id); n > 0 {
		return n
	}
	if v, ok := ix.Lookup(id); ok && ix.docField(int(v), 0) == "" {
		return 1
	}
	return 0
}

// IsDocument reports whether id names a document of the index: a node
// that is its own document, or the document passages were cut from.
func (ix *Index) IsDocument(id string) bool {
	if ix.docCounts().count(id) > 0 {
		return true
	}
	v, ok := ix.Lookup(id)
	return ok && ix.docField(int(v), 0) == ""
}
