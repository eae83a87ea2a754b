// Package api holds the request and response types of `gleaner serve`'s
// HTTP API (server/openapi.yaml). It imports only the standard library, so
// a caller links it (and server/client, built on it) without the engine.
package api

import "encoding/json"

// RetrieveRequest is the body of POST /v1/retrieve.
type RetrieveRequest struct {
	Index string `json:"index"`
	Query string `json:"query"`
	// Method is a name from GET /v1/methods, or "auto" (the default when
	// absent): the server's profile's method, else "ppr" over the index's
	// links and mentions edges when it has them and "bm25" when it has
	// neither. The response names the method run.
	Method string `json:"method,omitempty"`
	// K is the number of hits: nil means 10; 1 to the server's max_k. K(n)
	// makes one.
	K *int `json:"k,omitempty"`
	// FirstStage overrides the first stage (bm25, vector, hybrid): the
	// option first_stage, for the methods that have one.
	FirstStage string `json:"first_stage,omitempty"`
	// GraphKinds restricts graph methods to these edge kinds: the option
	// graph_kind, for the methods that have one.
	GraphKinds []string `json:"graph_kinds,omitempty"`
	// Options set the method's settings by name, as GET /v1/methods lists
	// them (e.g. {"bmax": 30, "alpha": 0}); a setting the method does not
	// have, or a server-local one (a model folder), is refused. A float
	// may also be the string "inf" or "-inf".
	Options map[string]any `json:"options,omitempty"`
	// Stream answers NDJSON: a line per round of a streaming method, then
	// the final line (Done).
	Stream bool `json:"stream,omitempty"`
	// TimeoutMS bounds the request (default and maximum: the server's).
	TimeoutMS int `json:"timeout_ms,omitempty"`
	// Text adds each hit's text to the response.
	Text bool `json:"text,omitempty"`
	// Filter restricts the request to the nodes whose metadata match it
	// (package retrieve/filter: {"field": "team", "eq": "platform"},
	// {"and": [...]}, …); only methods whose "filters" is true in GET
	// /v1/methods take one. A key's ACL groups are ANDed in by the server.
	Filter json.RawMessage `json:"filter,omitempty"`
	// GroupBy is "passage" (the default: a hit is a node) or "document": a
	// hit is a document, scored by its best passage, which the hit shows.
	GroupBy string `json:"group_by,omitempty"`
	// MinSeq asks for read-your-writes: the request is answered from an
	// index that has applied this write (a write response's seq), after
	// waiting a moment for it (a replica of a fleet may lag), or 503 with
	// Retry-After. 0 or absent: no wait.
	MinSeq uint64 `json:"min_seq,omitempty"`
}

// K returns k as RetrieveRequest.K wants it.
func K(k int) *int { return &k }

// Hit is one ranked node, or with group_by "document" one document shown
// by its best passage.
type Hit struct {
	// ID is the node's id; with group_by "document" the document's.
	ID    string `json:"id"`
	Title string `json:"title,omitempty"`
	// Document is the id of the document the node was cut from (its own
	// id when it is a document of its own).
	Document string `json:"document"`
	// Passage is, with group_by "document", the best passage's node id.
	Passage string `json:"passage,omitempty"`
	// Section is the passage's heading path in its document, if any.
	Section string  `json:"section,omitempty"`
	Score   float32 `json:"score"`
	Text    string  `json:"text,omitempty"`
}

// RetrieveResponse answers POST /v1/retrieve. Streamed, each round is one
// line (Round 1, 2, …, the ranking so far), and the last line has Done set
// and Round the number of rounds: it repeats the final ranking, so a
// caller that reads only the last line has the answer. Unstreamed, the one
// response has Done set.
type RetrieveResponse struct {
	Index  string  `json:"index"`
	Method string  `json:"method"`
	Round  int     `json:"round,omitempty"`
	Done   bool    `json:"done,omitempty"`
	TookMS float64 `json:"took_ms"`
	Hits   []Hit   `json:"hits"`
}

// Error is the body of every error response (and the last line of a
// stream that fails): the message, and the request field at fault, if any
// ("options.bmax" for a setting).
type Error struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

// Setting describes one setting of a method (GET /v1/methods).
type Setting struct {
	Name    string `json:"name"` // its key in RetrieveRequest.Options
	Type    string `json:"type"` // int, float, string, bool, ints, strings
	Default any    `json:"default"`
	Usage   string `json:"usage"`
	// Local settings are the server's to set (a model folder): a request
	// may not.
	Local bool `json:"local,omitempty"`
}

// Method describes one method (GET /v1/methods).
type Method struct {
	Name     string    `json:"name"`
	Summary  string    `json:"summary"`
	Settings []Setting `json:"settings"`
	// Reads names the index sections the method needs (GET /v1/indexes
	// lists each index's).
	Reads []string `json:"reads,omitempty"`
	// Host, when set, says which of the method's work runs on the host
	// whatever backend the server runs, and why.
	Host string `json:"host,omitempty"`
	// Filters says the method takes a filter (and serves keys with ACL
	// groups); the others refuse a filtered request with 400.
	Filters bool `json:"filters"`
}

// Methods is the body of GET /v1/methods.
type Methods struct {
	Methods     []Method `json:"methods"`
	FirstStages []string `json:"first_stages"`
}

// Index describes one served index (GET /v1/indexes).
type Index struct {
	Name       string   `json:"name"`
	Nodes      int      `json:"nodes"`
	Edges      int      `json:"edges"`
	GraphKinds []string `json:"graph_kinds"`
	Head       bool     `json:"head"`
	// Sections are the structures built into the index (a Tri-Graph, a
	// trained encoder) that methods read.
	Sections []string `json:"sections"`
}

// Document is the body of PUT /v1/indexes/{index}/documents/{id} and the
// content of a change in POST /v1/indexes/{index}/documents. A document
// is one passage (Title, Text and the rest at the top level; its node id
// is the document's id) or the passages cut from it (Nodes, each with its
// own id).
type Document struct {
	Title   string         `json:"title,omitempty"`
	Text    string         `json:"text,omitempty"`
	Type    string         `json:"type,omitempty"`
	Aliases []string       `json:"aliases,omitempty"`
	Meta    map[string]any `json:"meta,omitempty"`
	Nodes   []DocumentNode `json:"nodes,omitempty"`
	// Edges start at the document's passages (Src: a node id of Nodes;
	// empty for a one-passage document) and end at any node of the index
	// after the change.
	Edges []DocumentEdge `json:"edges,omitempty"`
	// Vectors are the passages' vectors, one per passage in order: needed
	// by an index of precomputed vectors, optional otherwise.
	Vectors [][]float32 `json:"vectors,omitempty"`
}

// DocumentNode is one passage of a Document.
type DocumentNode struct {
	ID      string         `json:"id"`
	Title   string         `json:"title,omitempty"`
	Text    string         `json:"text"`
	Type    string         `json:"type,omitempty"`
	Aliases []string       `json:"aliases,omitempty"`
	Section string         `json:"section,omitempty"`
	Meta    map[string]any `json:"meta,omitempty"`
}

// DocumentEdge is an edge leaving a Document's passage.
type DocumentEdge struct {
	Src    string   `json:"src,omitempty"`
	Dst    string   `json:"dst"`
	Kind   string   `json:"kind,omitempty"`
	Rel    string   `json:"rel,omitempty"`
	Weight *float64 `json:"weight,omitempty"` // nil: 1
}

// DocumentChange is one change of a documents batch: Op "add" (refused
// when the index has the document), "replace" (adds it when absent) or
// "delete" (refused when absent; no content).
type DocumentChange struct {
	Op string `json:"op"`
	ID string `json:"id"`
	Document
}

// DocumentsRequest is the body of POST /v1/indexes/{index}/documents: its
// changes are committed together, all or none.
type DocumentsRequest struct {
	Changes []DocumentChange `json:"changes"`
}

// RefitResponse answers POST /v1/indexes/{index}/refit.
type RefitResponse struct {
	Index  string  `json:"index"`
	Nodes  int     `json:"nodes"` // passages in the index
	Dims   int     `json:"dims"`  // the refitted basis's dimensions
	TookMS float64 `json:"took_ms"`
	// Stale names what the new vectors left stale (sections and edge
	// kinds built from the vectors): a refresh builds them again.
	Stale []string `json:"stale"`
}

// WriteResponse answers a write: once it is sent, the change is durable
// and every later request sees it.
type WriteResponse struct {
	Index string `json:"index"`
	// Seq is the change's record in the index's update log: on a replica
	// of a fleet, its sequence in the fleet's log (a later request's
	// min_seq).
	Seq     uint64 `json:"seq"`
	Nodes   int    `json:"nodes"`   // passages in the index after it (a fleet replica: when it answers)
	Changes int    `json:"changes"` // changes committed
	// Pending (answered 202 by a replica of a fleet): the fleet's log
	// stored the change, and this replica had not applied it within the
	// request's time; it will, on every replica (read with min_seq).
	Pending bool `json:"pending,omitempty"`
	// Duplicate (a replica of a fleet): the fleet's log already held this
	// write (a retry with the same Idempotency-Key); Seq is the first's.
	// A refusal of the first is answered as such while this replica
	// remembers it; after its restart a refused first is answered 200 with
	// duplicate.
	Duplicate bool `json:"duplicate,omitempty"`
}
