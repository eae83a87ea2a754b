package filter

import (
	"math/bits"

	"github.com/gleaner-rag/gleaner/internal/memo"
)

// Set is a set of node numbers of one index (a bitset). A nil *Set is no
// restriction: every node. Sets are immutable once made, so safe for
// concurrent use.
type Set struct {
	n     int
	words []uint64
	count int
	memo  memo.Map
	// isolated: the nodes outside the set have no edges in the graphs of
	// the index it was made for (Live).
	isolated bool
}

// Live is the set of the nodes of an index of n nodes that are not
// deleted (bit v of deleted, as index.Index.DeletedWords gives them). A
// live index drops a deleted node's edges, so the set is Isolated.
func Live(n int, deleted []uint64) *Set {
	s := &Set{n: n, words: make([]uint64, (n+63)/64), isolated: true}
	for i := range s.words {
		s.words[i] = ^uint64(0)
		if i < len(deleted) {
			s.words[i] &^= deleted[i]
		}
	}
	s.trim()
	s.recount()
	return s
}

// Plain is s without Isolated (s itself when it is not): the set of the
// same nodes as a filter of any index of its size.
func (s *Set) Plain() *Set {
	if !s.Isolated() {
		return s
	}
	return s.Memo("filter.plain", func() any {
		return &Set{n: s.n, words: s.words, count: s.count}
	}).(*Set)
}

// Isolated reports whether the nodes outside s have no edges in the
// graphs of s's index (a Live set): a walk over those graphs already
// equals one over the subgraph of s, with no induced view to make.
func (s *Set) Isolated() bool { return s != nil && s.isolated }

// NewSet is the set of the given nodes of an index of n nodes.
func NewSet(n int, nodes ...int32) *Set {
	s := &Set{n: n, words: make([]uint64, (n+63)/64)}
	for _, v := range nodes {
		s.add(int(v))
	}
	s.recount()
	return s
}

// All is the set of every node of an index of n nodes.
func All(n int) *Set {
	s := &Set{n: n, words: make([]uint64, (n+63)/64)}
	for i := range s.words {
		s.words[i] = ^uint64(0)
	}
	s.trim()
	s.recount()
	return s
}

func (s *Set) add(v int) { s.words[v>>6] |= 1 << (v & 63) }

func (s *Set) trim() {
	if r := s.n & 63; r != 0 {
		s.words[len(s.words)-1] &= 1<<r - 1
	}
}

func (s *Set) recount() {
	s.count = 0
	for _, w := range s.words {
		s.count += bits.OnesCount64(w)
	}
}

// Has reports whether node v is in the set (always, for a nil set).
func (s *Set) Has(v int) bool {
	if s == nil {
		return true
	}
	return v >= 0 && v < s.n && s.words[v>>6]&(1<<(v&63)) != 0
}

// Words are the set's bits (node v is bit v%64 of word v/64), for
// scorers that test membership in a loop; do not modify them.
func (s *Set) Words() []uint64 { return s.words }

// Len is the number of nodes in the set.
func (s *Set) Len() int { return s.count }

// N is the number of nodes of the index the set is over.
func (s *Set) N() int { return s.n }

// and, or and not combine sets over the same index.
func (s *Set) and(o *Set) *Set {
	out := &Set{n: s.n, words: make([]uint64, len(s.words))}
	for i := range out.words {
		out.words[i] = s.words[i] & o.words[i]
	}
	out.recount()
	return out
}

func (s *Set) or(o *Set) *Set {
	out := &Set{n: s.n, words: make([]uint64, len(s.words))}
	for i := range out.words {
		out.words[i] = s.words[i] | o.words[i]
	}
	out.recount()
	return out
}

func (s *Set) not() *Set {
	out := &Set{n: s.n, words: make([]uint64, len(s.words))}
	for i := range out.words {
		out.words[i] = ^s.words[i]
	}
	out.trim()
	out.recount()
	return out
}

// Intersect is the nodes in both a and b; nil stands for every node.
func Intersect(a, b *Set) *Set {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return a.and(b)
}

// Keep is Has as a function (nil when s is nil), for code that takes a
// node predicate.
func (s *Set) Keep() func(int32) bool {
	if s == nil {
		return nil
	}
	return func(v int32) bool { return s.Has(int(v)) }
}

// Memo returns the value stored on the set under key, making it with make
// the first time: what a method derives from a set (BM25's statistics
// over it) is computed once for all the queries that share the set.
func (s *Set) Memo(key string, make func() any) any { return s.memo.Get(key, make) }
