// Package filter is gleaner's metadata filter: a JSON expression over the
// metadata stored with each node (front-matter fields of imported files,
// "meta" of JSONL nodes) and the node's document, evaluated against an
// index into the Set of nodes a request may see. Methods that honour
// filters (retrieve.Query.Allow) never rank, score, walk or quote a node
// outside the set.
//
// The JSON form, one operator per object:
//
//	{"field": "team", "eq": "platform"}          equality (a list field: any element)
//	{"field": "tags", "in": ["a", "b"]}          membership (any element of a list field)
//	{"field": "year", "gte": 2020, "lt": 2025}   ranges (numbers, or text compared bytewise)
//	{"field": "owner", "exists": true}           presence (even as [] or null)
//	{"and": [...]}, {"or": [...]}, {"not": {...}}
//
// The field "document" is the node's document id. A node without the field
// matches no comparison (so {"not": …} of one matches it).
package filter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/gleaner-rag/gleaner/internal/jsonfile"
)

// Limits on a filter, so a request cannot make evaluation unbounded.
const (
	MaxNodes = 256  // operators in one filter
	MaxDepth = 16   // nesting of and/or/not
	MaxIn    = 1024 // values of one "in"
	MaxBytes = 64 << 10
)

// DocumentField is the field that names a node's document.
const DocumentField = "document"

// Filter is one node of a filter expression: exactly one of a comparison
// (Field with Eq, In, a range or Exists), And, Or or Not.
type Filter struct {
	Field  string `json:"field,omitempty"`
	Eq     any    `json:"eq,omitempty"`
	In     []any  `json:"in,omitempty"`
	Gt     any    `json:"gt,omitempty"`
	Gte    any    `json:"gte,omitempty"`
	Lt     any    `json:"lt,omitempty"`
	Lte    any    `json:"lte,omitempty"`
	Exists *bool  `json:"exists,omitempty"`

	And []*Filter `json:"and,omitempty"`
	Or  []*Filter `json:"or,omitempty"`
	Not *Filter   `json:"not,omitempty"`
}

// Error is a filter that cannot be used; Path locates the operator
// ("and[1].not").
type Error struct {
	Path string
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return "filter: " + e.Msg
	}
	return "filter: " + e.Path + ": " + e.Msg
}

// Parse reads a filter from JSON strictly (unknown keys, repeated keys and
// trailing data are errors) and checks it.
func Parse(b []byte) (*Filter, error) {
	if len(b) > MaxBytes {
		return nil, &Error{Msg: fmt.Sprintf("%d bytes, over the limit of %d", len(b), MaxBytes)}
	}
	var f Filter
	if err := jsonfile.Decode(b, &f); err != nil {
		return nil, &Error{Msg: strings.TrimPrefix(err.Error(), "json: ")}
	}
	if err := f.Check(); err != nil {
		return nil, err
	}
	return &f, nil
}

// Check validates f: one operator per node, values of the right kinds,
// and the size limits.
func (f *Filter) Check() error {
	n := 0
	return f.check("", 0, &n)
}

func (f *Filter) check(path string, depth int, n *int) error {
	*n++
	switch {
	case f == nil:
		return &Error{Path: path, Msg: "null; want an operator object"}
	case depth > MaxDepth: // the path would be as long as the nesting: leave it out
		return &Error{Msg: fmt.Sprintf("nested deeper than %d", MaxDepth)}
	case *n > MaxNodes:
		return &Error{Path: path, Msg: fmt.Sprintf("more than %d operators", MaxNodes)}
	}
	ops := f.operators()
	if len(ops) != 1 {
		return &Error{Path: path, Msg: fmt.Sprintf("want exactly one of field (with eq, in, gt/gte/lt/lte or exists), and, or, not; got %v", ops)}
	}
	switch ops[0] {
	case "and", "or":
		list := f.And
		if ops[0] == "or" {
			list = f.Or
		}
		if len(list) == 0 {
			return &Error{Path: path, Msg: ops[0] + " of nothing"}
		}
		for i, c := range list {
			if err := c.check(fmt.Sprintf("%s%s[%d]", dot(path), ops[0], i), depth+1, n); err != nil {
				return err
			}
		}
		return nil
	case "not":
		return f.Not.check(dot(path)+"not", depth+1, n)
	}
	return f.checkComparison(path)
}

func dot(path string) string {
	if path == "" {
		return ""
	}
	return path + "."
}

// operators names what f sets: "field" for a comparison, and the
// combinators.
func (f *Filter) operators() []string {
	var ops []string
	if f.Field != "" || f.Eq != nil || f.In != nil || f.Gt != nil || f.Gte != nil || f.Lt != nil || f.Lte != nil || f.Exists != nil {
		ops = append(ops, "field")
	}
	if f.And != nil {
		ops = append(ops, "and")
	}
	if f.Or != nil {
		ops = append(ops, "or")
	}
	if f.Not != nil {
		ops = append(ops, "not")
	}
	return ops
}

func (f *Filter) checkComparison(path string) error {
	if f.Field == "" || len(f.Field) > 256 {
		return &Error{Path: path, Msg: "field: want a name of 1 to 256 bytes"}
	}
	kinds := 0
	for _, set := range []bool{f.Eq != nil, f.In != nil, f.Gt != nil || f.Gte != nil || f.Lt != nil || f.Lte != nil, f.Exists != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return &Error{Path: path, Msg: fmt.Sprintf("field %q: want exactly one of eq, in, a range (gt, gte, lt, lte) or exists", f.Field)}
	}
	if f.Gt != nil && f.Gte != nil || f.Lt != nil && f.Lte != nil {
		return &Error{Path: path, Msg: fmt.Sprintf("field %q: gt with gte, or lt with lte", f.Field)}
	}
	if len(f.In) > MaxIn {
		return &Error{Path: path, Msg: fmt.Sprintf("field %q: in has %d values, over the limit of %d", f.Field, len(f.In), MaxIn)}
	}
	for name, v := range map[string]any{"eq": f.Eq, "gt": f.Gt, "gte": f.Gte, "lt": f.Lt, "lte": f.Lte} {
		if v != nil && !isScalar(v) {
			return &Error{Path: path, Msg: fmt.Sprintf("field %q: %s: want text, a number or a boolean", f.Field, name)}
		}
	}
	for _, v := range f.In {
		if !isScalar(v) {
			return &Error{Path: path, Msg: fmt.Sprintf("field %q: in: want text, numbers or booleans", f.Field)}
		}
	}
	for name, v := range map[string]any{"gt": f.Gt, "gte": f.Gte, "lt": f.Lt, "lte": f.Lte} {
		if _, ok := v.(bool); ok {
			return &Error{Path: path, Msg: fmt.Sprintf("field %q: %s: a boolean has no order", f.Field, name)}
		}
	}
	return nil
}

func isScalar(v any) bool {
	switch x := v.(type) {
	case string, bool:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	}
	return false
}

// And is the conjunction of fs, leaving out nil ones; nil when all are.
func And(fs ...*Filter) *Filter {
	var keep []*Filter
	for _, f := range fs {
		if f != nil {
			keep = append(keep, f)
		}
	}
	switch len(keep) {
	case 0:
		return nil
	case 1:
		return keep[0]
	}
	return &Filter{And: keep}
}

// ACL is the filter of an access-control field: a node whose field lists
// one of groups, or that has no such field (it is public). A node whose
// field is empty ([] or null) is nobody's. Groups match exactly, case
// included. A caller with no groups sees only public nodes.
func ACL(field string, groups []string) *Filter {
	public := &Filter{Not: &Filter{Field: field, Exists: ptr(true)}}
	if len(groups) == 0 {
		return public
	}
	in := make([]any, len(groups))
	for i, g := range groups {
		in[i] = g
	}
	return &Filter{Or: []*Filter{public, {Field: field, In: in}}}
}

func ptr[T any](v T) *T { return &v }

// String is f as compact JSON.
func (f *Filter) String() string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		return fmt.Sprintf("filter(%v)", err)
	}
	return strings.TrimSpace(buf.String())
}
