package filter

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/memo"
)

// columns are an index's node metadata decoded once: per field, each
// node's values (a list field's elements; nil where the node lacks it).
type columns struct {
	fields map[string][][]any
	err    error
}

func columnsOf(ix *index.Index) (*columns, error) {
	c := ix.Memo("filter.columns", func() any { return buildColumns(ix) }).(*columns)
	return c, c.err
}

func buildColumns(ix *index.Index) *columns {
	c := &columns{fields: map[string][][]any{}}
	n := ix.N()
	doc := make([][]any, n)
	for i := range n {
		doc[i] = []any{ix.Document(i)}
		s := ix.MetaJSON(i)
		if s == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			c.err = fmt.Errorf("filter: index %s: node %q: meta: %w", ix.Dir, ix.NodeID(i), err)
			return c
		}
		for k, v := range m {
			col := c.fields[k]
			if col == nil {
				col = make([][]any, n)
				c.fields[k] = col
			}
			if list, ok := v.([]any); ok {
				col[i] = list
			} else {
				col[i] = []any{v}
			}
		}
	}
	if _, taken := c.fields[DocumentField]; !taken { // a meta field of that name wins
		c.fields[DocumentField] = doc
	}
	return c
}

// Eval is the set of ix's nodes f matches; nil f matches every node
// (returned as nil, "no restriction"). The sets of the last cacheSize
// distinct filters of an index are kept, so a key's ACL, repeated on every
// request, is evaluated once.
func Eval(ix *index.Index, f *Filter) (*Set, error) {
	if f == nil {
		return nil, nil
	}
	if err := f.Check(); err != nil {
		return nil, err
	}
	c, err := columnsOf(ix)
	if err != nil {
		return nil, err
	}
	cache := ix.Memo("filter.sets", func() any { return memo.NewLRU[string, *Set](cacheSize) }).(*memo.LRU[string, *Set])
	return cache.Get(f.String(), func() *Set { return c.eval(f, ix.N()) }), nil
}

// cacheSize is how many evaluated sets an index keeps.
const cacheSize = 128

func (c *columns) eval(f *Filter, n int) *Set {
	switch {
	case f.And != nil:
		s := c.eval(f.And[0], n)
		for _, g := range f.And[1:] {
			s = s.and(c.eval(g, n))
		}
		return s
	case f.Or != nil:
		s := c.eval(f.Or[0], n)
		for _, g := range f.Or[1:] {
			s = s.or(c.eval(g, n))
		}
		return s
	case f.Not != nil:
		return c.eval(f.Not, n).not()
	case f.Exists != nil && !*f.Exists: // the nodes without the field
		return c.eval(&Filter{Field: f.Field, Exists: ptr(true)}, n).not()
	}
	s := &Set{n: n, words: make([]uint64, (n+63)/64)}
	for i, vals := range c.fields[f.Field] {
		// A field present as [] or null exists: `acl: []` is an ACL that
		// admits no group, never a public node.
		if vals != nil && (f.Exists != nil || slices.ContainsFunc(vals, f.matches)) {
			s.add(i)
		}
	}
	s.recount()
	return s
}

// matches reports whether one metadata value satisfies the comparison.
func (f *Filter) matches(v any) bool {
	switch {
	case f.Exists != nil:
		return *f.Exists
	case f.Eq != nil:
		return equal(v, f.Eq)
	case f.In != nil:
		return slices.ContainsFunc(f.In, func(w any) bool { return equal(v, w) })
	}
	for _, b := range []struct {
		bound any
		ok    func(int) bool
	}{{f.Gt, func(c int) bool { return c > 0 }}, {f.Gte, func(c int) bool { return c >= 0 }},
		{f.Lt, func(c int) bool { return c < 0 }}, {f.Lte, func(c int) bool { return c <= 0 }}} {
		if b.bound == nil {
			continue
		}
		c, comparable := compare(v, b.bound)
		if !comparable || !b.ok(c) {
			return false
		}
	}
	return true
}

func equal(a, b any) bool {
	c, ok := compare(a, b)
	if ok {
		return c == 0
	}
	ab, aok := a.(bool)
	bb, bok := b.(bool)
	return aok && bok && ab == bb
}

// compare orders two numbers or two texts; ok is false for other pairs.
func compare(a, b any) (int, bool) {
	switch x := a.(type) {
	case float64:
		if y, ok := b.(float64); ok {
			return cmp.Compare(x, y), true
		}
	case string:
		if y, ok := b.(string); ok {
			return cmp.Compare(x, y), true
		}
	}
	return 0, false
}
