package index

import (
	"encoding/json"
	"slices"
)

// File names inside an index folder.
const (
	fNodeStrings = "node_strings.bytes"
	fNodeOff     = "node_off.i64"
	fOutPtr      = "graph_out_ptr.i64"
	fOutIdx      = "graph_out_idx.i32"
	fOutW        = "graph_out_w.f32"
	fOutRel      = "graph_out_rel.i32"
	fInPtr       = "graph_in_ptr.i64"
	fInIdx       = "graph_in_idx.i32"
	fInW         = "graph_in_w.f32"
	fInRel       = "graph_in_rel.i32"
	fTermBlob    = "bm25_terms.bytes"
	fTermOff     = "bm25_terms_off.i64"
	fPostPtr     = "bm25_ptr.i64"
	fPostDoc     = "bm25_doc.u32"
	fPostTF      = "bm25_tf.u32"
	fDocLen      = "bm25_doclen.u32"
	fVectors     = "vectors.f32"
	fLSARow      = "lsa_row.i32"
	fLSAIDF      = "lsa_idf.f32"
	fLSAV        = "lsa_v.f32"
	fRelations   = "relations.json"
)

// coreFiles are the index's own files; sections add theirs, named
// "<section>.<file>".
var coreFiles = []string{fNodeStrings, fNodeOff, fOutPtr, fOutIdx, fOutW, fOutRel, fInPtr, fInIdx, fInW, fInRel,
	fNodeDoc, fNodeDocOff, fNodeSpan, fTermBlob, fTermOff, fPostPtr, fPostDoc, fPostTF, fDocLen, fVectors, fLSARow, fLSAIDF, fLSAV, fRelations}

// nodeFields is the number of strings stored per node: id, title, text,
// type, aliases (joined by aliasSep).
const (
	nodeFields = 5
	aliasSep   = "\x1f"
)

// Embedder names.
const (
	EmbedderLSA         = "lsa"
	EmbedderPrecomputed = "precomputed"
)

// Metric names for the dense vectors.
const (
	MetricCosine = "cosine"
	MetricDot    = "dot"
)

// Meta is the index's description, stored in the manifest.
type Meta struct {
	Nodes      int            `json:"nodes"`
	Edges      int            `json:"edges"`
	Dims       int            `json:"dims"`
	Embedder   string         `json:"embedder"`
	Metric     string         `json:"metric"`
	BM25       map[string]any `json:"bm25"`
	Terms      int            `json:"terms"`
	Postings   int            `json:"postings"`
	LSA        map[string]any `json:"lsa,omitempty"`
	GraphKinds []string       `json:"graph_kinds,omitempty"`
	Relations  int            `json:"relations"`
	Source     string         `json:"source,omitempty"`
	// Sections are the structures built into the index beside its own
	// files (a Tri-Graph, a trained head), by name.
	Sections map[string]SectionRecord `json:"sections,omitempty"`
	// Stale lists what changes since the build left out of date (nil:
	// nothing); its users refuse to answer from it until it is rebuilt.
	Stale *Stale `json:"stale,omitempty"`
	// Live is where the index stands in its update log (nil: it was never
	// updated in place).
	Live *LiveState `json:"live,omitempty"`
	// KindSettings are the settings derived edge kinds were built with
	// (SetGraphWith), by kind: their updaters follow changes with them.
	KindSettings map[string]json.RawMessage `json:"kind_settings,omitempty"`
}

// Stale names the sections and edge kinds that changed nodes left out of
// date: they were derived from the whole index and do not follow changes
// (UpdatePolicy Rebuild; mentions and knn edges).
type Stale struct {
	Sections   []string `json:"sections,omitempty"`
	GraphKinds []string `json:"graph_kinds,omitempty"`
	Changes    int64    `json:"changes"` // changes applied since the first went stale
	// Settings are the stale sections' descriptions as they were built
	// (their build settings), by name: a refresh builds them the same way.
	Settings map[string]json.RawMessage `json:"settings,omitempty"`
}

// LiveState ties an index to its update log: the log's id and the last
// log record the index includes.
type LiveState struct {
	Log string `json:"log"`
	Seq uint64 `json:"seq"`
	// Source is the last record of the log the changes came from (a
	// fleet's stream, index/fleet) that the index includes; 0 for none.
	Source uint64 `json:"source,omitempty"`
	// Origin names that log (a fleet's stream); "" for none.
	Origin string `json:"origin,omitempty"`
}

// relationTable names relation ids and edge kinds.
type relationTable struct {
	Relations []string `json:"relations"`
	Kinds     []string `json:"kinds"`
}

// without is s less the section and edge kind named ("" names none); nil
// when nothing stale is left.
func (s *Stale) without(section, kind string) *Stale {
	if s == nil {
		return nil
	}
	out := &Stale{Changes: s.Changes}
	for _, n := range s.Sections {
		if n != section {
			out.Sections = append(out.Sections, n)
			if raw, ok := s.Settings[n]; ok {
				out.setSettings(n, raw)
			}
		}
	}
	for _, k := range s.GraphKinds {
		if k != kind {
			out.GraphKinds = append(out.GraphKinds, k)
		}
	}
	if len(out.Sections)+len(out.GraphKinds) == 0 {
		return nil
	}
	return out
}

// setSettings records the description section n had when it went stale.
func (s *Stale) setSettings(n string, raw json.RawMessage) {
	if s.Settings == nil {
		s.Settings = map[string]json.RawMessage{}
	}
	s.Settings[n] = raw
}

// StaleKind reports whether the edges of kind are stale.
func (m *Meta) StaleKind(kind string) bool {
	return m.Stale != nil && slices.Contains(m.Stale.GraphKinds, kind)
}
