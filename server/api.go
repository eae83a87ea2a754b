// Package server serves gleaner's retrieval methods over HTTP for
// latency-critical callers: JSON and NDJSON streaming, admission control,
// Prometheus metrics, atomic index reloads and graceful drain. Its request
// and response types are package server/api (standard library only);
// server/client is the Go client; openapi.yaml describes the API.
package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gleaner-rag/gleaner/internal/excerpt"
	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/server/api"
)

// The API's types, from package api.
type (
	RetrieveRequest  = api.RetrieveRequest
	RetrieveResponse = api.RetrieveResponse
	Hit              = api.Hit
	Error            = api.Error
)

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
	// MaxWriteBytes bounds a write request's body (default 32 MiB).
	MaxWriteBytes int64
}

// DecodeRequest reads and checks a retrieve request: unknown fields,
// trailing data, invalid UTF-8, an empty or oversize query and k out of
// range are FieldErrors. Index and method names and the options are
// checked by the server. Numbers in options keep their text
// (json.Number), so a setting reads them exactly.
func DecodeRequest(r io.Reader, l Limits) (*RetrieveRequest, error) {
	body, err := io.ReadAll(io.LimitReader(r, l.MaxBodyBytes+1))
	if err != nil {
		return nil, &FieldError{Msg: "reading the body: " + err.Error()}
	}
	if int64(len(body)) > l.MaxBodyBytes {
		return nil, &FieldError{Msg: fmt.Sprintf("a body over %d bytes", l.MaxBodyBytes)}
	}
	if !utf8.Valid(body) { // encoding/json would turn the bad bytes into U+FFFD silently
		return nil, &FieldError{Msg: fmt.Sprintf("the body is not valid UTF-8 (at byte %d)", excerpt.InvalidUTF8At(body))}
	}
	if err := checkKeys(body); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
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
	case errors.As(err, &te) && te.Field == "":
		return &FieldError{Msg: fmt.Sprintf("want a JSON object, got %s", te.Value)}
	case errors.As(err, &te):
		return &FieldError{Field: te.Field, Msg: fmt.Sprintf("want %s, got %s", jsonKind(te.Type), te.Value)}
	case errors.As(err, &se):
		return &FieldError{Msg: fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, err)}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &FieldError{Field: clip(f), Msg: "unknown field"}
	case errors.Is(err, io.EOF):
		return &FieldError{Msg: "empty body; want a JSON object"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &FieldError{Msg: fmt.Sprintf("truncated JSON, or a body over %d bytes", l.MaxBodyBytes)}
	}
	return &FieldError{Msg: err.Error()}
}

// jsonKind names a Go type as the JSON a client sends.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer ≥ 0 (within 64 bits)"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	}
	return "a number"
}

// requestFields are RetrieveRequest's JSON names.
var requestFields = func() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeFor[RetrieveRequest]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out[name] = true
	}
	return out
}()

// checkKeys refuses what encoding/json would let through silently: a key
// given twice (the last would win), at the top or in options, and a field
// name in another case (it matches names case-insensitively). A body that
// is not a JSON object is left to the decoder, which says why.
func checkKeys(body []byte) error {
	keys, _, err := objectKeys(json.NewDecoder(bytes.NewReader(body)), "", func(key string) bool { return key == "options" })
	if err != nil {
		return err
	}
	for _, k := range keys {
		if !requestFields[k] {
			return &FieldError{Field: clip(k), Msg: "unknown field (names are lowercase: server/openapi.yaml)"}
		}
	}
	return nil
}

// objectKeys reads one JSON object from dec and returns its keys, refusing
// a key given twice (prefix names the object in the error); the objects
// under the keys nested accepts are checked alike. ok is false when the
// value is not a well-formed object (the decoder proper reports it).
func objectKeys(dec *json.Decoder, prefix string, nested func(string) bool) (keys []string, ok bool, err error) {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false, nil
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		if err != nil || !isKey {
			return nil, false, nil
		}
		if seen[key] {
			return nil, false, &FieldError{Field: clip(prefix + key), Msg: "given twice"}
		}
		seen[key] = true
		keys = append(keys, key)
		if nested != nil && nested(key) {
			if _, ok, err := objectKeys(dec, prefix+key+".", nil); !ok || err != nil {
				return nil, false, err
			}
			continue
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return nil, false, nil
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, false, nil
	}
	return keys, true, nil
}

// clip shortens a name or value an error repeats.
func clip(s string) string { return excerpt.Of(s, 80) }

// maxOptions bounds a request's settings (no method has more).
const maxOptions = 64

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
	case len(r.Options) > maxOptions:
		return &FieldError{"options", fmt.Sprintf("%d settings, over the limit of %d", len(r.Options), maxOptions)}
	case retrieve.CheckGroupBy(r.GroupBy) != nil:
		return &FieldError{"group_by", fmt.Sprintf("%s: want %q or %q", clip(strconv.Quote(r.GroupBy)), retrieve.GroupPassage, retrieve.GroupDocument)}
	}
	if r.K == nil {
		r.K = api.K(10)
	}
	return nil
}
