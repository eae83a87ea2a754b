// Package server serves gleaner's retrieval methods over HTTP for
// latency-critical callers: JSON and NDJSON streaming, admission control,
// Prometheus metrics, atomic index reloads and graceful drain. server/client
// is its Go client; openapi.yaml describes the API.
package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// RetrieveRequest is the body of POST /v1/retrieve.
type RetrieveRequest struct {
	Index string `json:"index"`
	Query string `json:"query"`
	// Method is a name from GET /v1/methods (default "bm25").
	Method string `json:"method,omitempty"`
	// K is the number of hits: absent means 10; 1 to the server's max_k.
	K *int `json:"k,omitempty"`
	// FirstStage overrides the first stage (bm25, vector, hybrid).
	FirstStage string `json:"first_stage,omitempty"`
	// GraphKinds restricts graph methods to these edge kinds.
	GraphKinds []string `json:"graph_kinds,omitempty"`
	// Options overrides method settings by name (see Options).
	Options *Options `json:"options,omitempty"`
	// Stream answers NDJSON, one line per round of a streaming method.
	Stream bool `json:"stream,omitempty"`
	// TimeoutMS bounds the request (default and maximum: the server's).
	TimeoutMS int `json:"timeout_ms,omitempty"`
	// Text adds each hit's text to the response.
	Text bool `json:"text,omitempty"`
}

// Options are the per-request method settings a caller may change; absent
// fields keep the server's defaults (retrieve.DefaultOptions).
type Options struct {
	BMax          *int     `json:"bmax,omitempty"`
	Batch         *int     `json:"batch,omitempty"`
	Alpha         *float64 `json:"alpha,omitempty"`
	Beta          *float64 `json:"beta,omitempty"`
	PPRSeeds      *int     `json:"ppr_seeds,omitempty"`
	PPRReset      *string  `json:"ppr_reset,omitempty"`
	PPRSeedWeight *string  `json:"ppr_seed_weight,omitempty"`
	Damping       *float64 `json:"damping,omitempty"`
	HybridWeight  *float64 `json:"hybrid_weight,omitempty"`
	HybridFusion  *string  `json:"hybrid_fusion,omitempty"`
}

// Hit is one ranked node.
type Hit struct {
	ID    string  `json:"id"`
	Title string  `json:"title,omitempty"`
	Score float32 `json:"score"`
	Text  string  `json:"text,omitempty"`
}

// RetrieveResponse answers POST /v1/retrieve; a streamed answer is a line
// per round with Round set, the last one with Done.
type RetrieveResponse struct {
	Index  string  `json:"index"`
	Method string  `json:"method"`
	Round  int     `json:"round,omitempty"`
	Done   bool    `json:"done,omitempty"`
	TookMS float64 `json:"took_ms"`
	Hits   []Hit   `json:"hits"`
}

// Error is the body of every error response: the field at fault, if any.
type Error struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

// FieldError is a request error that names its field.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Limits bound what a request may ask for.
type Limits struct {
	MaxBodyBytes  int64 // request body (default 1 MiB)
	MaxQueryBytes int   // query text (default 16 KiB)
	MaxK          int   // hits per request (default 1000)
}

// DecodeRequest reads and checks a retrieve request: unknown fields,
// trailing data, invalid UTF-8, an empty or oversize query and k out of
// range are FieldErrors. Index and method names are checked by the server.
func DecodeRequest(r io.Reader, l Limits) (*RetrieveRequest, error) {
	dec := json.NewDecoder(io.LimitReader(r, l.MaxBodyBytes+1))
	dec.DisallowUnknownFields()
	var req RetrieveRequest
	if err := dec.Decode(&req); err != nil {
		return nil, decodeError(err, l)
	}
	if dec.More() {
		return nil, &FieldError{Field: "", Msg: "trailing data after the JSON object"}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &FieldError{Field: "", Msg: "trailing data after the JSON object"}
	}
	return &req, checkRequest(&req, l)
}

func decodeError(err error, l Limits) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return &FieldError{Field: te.Field, Msg: fmt.Sprintf("want %s, got %s", te.Type, te.Value)}
	case errors.As(err, &se):
		return &FieldError{Msg: fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, err)}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &FieldError{Field: f, Msg: "unknown field"}
	case errors.Is(err, io.EOF):
		return &FieldError{Msg: "empty body; want a JSON object"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &FieldError{Msg: fmt.Sprintf("truncated JSON, or a body over %d bytes", l.MaxBodyBytes)}
	}
	return &FieldError{Msg: err.Error()}
}

func checkRequest(r *RetrieveRequest, l Limits) error {
	switch {
	case r.Index == "":
		return &FieldError{"index", "required"}
	case strings.TrimSpace(r.Query) == "":
		return &FieldError{"query", "empty"}
	case len(r.Query) > l.MaxQueryBytes:
		return &FieldError{"query", fmt.Sprintf("%d bytes, over the limit of %d", len(r.Query), l.MaxQueryBytes)}
	case !utf8.ValidString(r.Query):
		return &FieldError{"query", "invalid UTF-8"}
	case r.K != nil && (*r.K < 1 || *r.K > l.MaxK):
		return &FieldError{"k", fmt.Sprintf("%d: want 1 to %d (absent: 10)", *r.K, l.MaxK)}
	case r.TimeoutMS < 0:
		return &FieldError{"timeout_ms", "negative"}
	}
	if r.Method == "" {
		r.Method = "bm25"
	}
	if r.K == nil {
		k := 10
		r.K = &k
	}
	return nil
}
