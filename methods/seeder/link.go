package seeder

import (
	"cmp"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/models/lexical"
)

// entityLinker is SeedER's dictionary linking (docs/methods.md §3.1 stage
// 1): every node's name and aliases, normalised (NFKC, case-folded,
// alphanumeric tokens), matched as whole token runs in the query.
type entityLinker struct {
	m     *graphops.Matcher
	nodes [][]int32 // pattern → the nodes carrying that name
	size  []int     // pattern → tokens
}

// linkTokens normalises text (NFKC, Unicode case folding) to its tokens
// of letters, digits and combining marks.
func linkTokens(text string) []string {
	return strings.FieldsFunc(cases.Fold().String(norm.NFKC.String(text)), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r)
	})
}

// usableName drops dictionary entries that are all stop words or "unknown".
func usableName(toks []string) bool {
	for _, t := range toks {
		if !lexical.IsStopWord(t) && t != "unknown" {
			return true
		}
	}
	return false
}

func newEntityLinker(ix *index.Index) *entityLinker { return newLinkerWithin(ix, nil) }

// newLinkerWithin is the dictionary of the nodes keep accepts (nil: all):
// a name of another node must not even take part in the longest-match
// rule, or it would hide a shorter name the query may see.
func newLinkerWithin(ix *index.Index, keep func(int32) bool) *entityLinker {
	return newLinker(ix.N(), func(v int) []string {
		if keep != nil && !keep(int32(v)) {
			return nil
		}
		return append([]string{ix.Title(v)}, ix.Aliases(v)...)
	})
}

// newLinker builds the dictionary of n nodes' names.
func newLinker(n int, names func(v int) []string) *entityLinker {
	l := &entityLinker{}
	pattern := map[string]int{}
	var patterns []string
	add := func(name string, v int32) {
		toks := linkTokens(name)
		if !usableName(toks) {
			return
		}
		key := " " + strings.Join(toks, " ") + " "
		p, ok := pattern[key]
		if !ok {
			p = len(patterns)
			pattern[key] = p
			patterns = append(patterns, key)
			l.nodes, l.size = append(l.nodes, nil), append(l.size, len(toks))
		}
		if !slices.Contains(l.nodes[p], v) {
			l.nodes[p] = append(l.nodes[p], v)
		}
	}
	for v := 0; v < n; v++ {
		for _, name := range names(v) {
			add(name, int32(v))
		}
	}
	l.m = graphops.NewMatcher(patterns)
	return l
}

// linkMatch is one dictionary match: a node and its token span.
type linkMatch struct {
	node       int32
	start, end int // token span [start, end)
}

// link returns the query's matches, dropping a match strictly inside a
// longer one.
func (l *entityLinker) link(query string) []linkMatch {
	toks := linkTokens(query)
	text := " " + strings.Join(toks, " ") + " "
	tokAt := map[int]int{} // byte offset of a token's leading space → token index
	off := 0
	for i, t := range toks {
		tokAt[off] = i
		off += len(t) + 1
	}
	var ms []linkMatch
	l.m.Scan(text, func(p int32, start, _ int) {
		s := tokAt[start]
		for _, v := range l.nodes[p] {
			ms = append(ms, linkMatch{v, s, s + l.size[p]})
		}
	})
	var out []linkMatch
	for _, a := range ms {
		inside := slices.ContainsFunc(ms, func(b linkMatch) bool {
			return b.start <= a.start && a.end <= b.end && b.end-b.start > a.end-a.start
		})
		if !inside {
			out = append(out, a)
		}
	}
	return out
}

// seeds orders the matches by span length, then cosine with the query,
// then node id, one slot per node, keeps k0 and fills to k with the nodes
// nearest the query (sims: every node's cosine). It returns the seeds and
// how many of them came from the dictionary.
func (l *entityLinker) seeds(query string, sims []float32, k0, k int, keep func(int32) bool) ([]int32, int) {
	ms := l.link(query)
	slices.SortFunc(ms, func(a, b linkMatch) int {
		return cmp.Or(cmp.Compare(b.end-b.start, a.end-a.start), cmp.Compare(sims[b.node], sims[a.node]), cmp.Compare(a.node, b.node))
	})
	var out []int32
	for _, m := range ms {
		if len(out) < k0 && !slices.Contains(out, m.node) {
			out = append(out, m.node)
		}
	}
	linked := len(out)
	if len(out) < k {
		top := engine.NewTopK(k)
		for v, s := range sims {
			if keep == nil || keep(int32(v)) {
				top.Push(int32(v), s)
			}
		}
		for _, h := range top.Results() {
			if len(out) == k {
				break
			}
			if !slices.Contains(out, h.Index) {
				out = append(out, h.Index)
			}
		}
	}
	return out, linked
}
