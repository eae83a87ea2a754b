package retrieve

import (
	"sync"

	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

// Visible is q as a method over ix must answer it. An index a live writer
// made may hold deleted nodes (index.Index.Deleted): Visible narrows
// q.Allow to the live ones, so the filter's guarantee (no other node is
// ranked, scored, walked or quoted, and the results equal those of the
// index with the other nodes deleted) makes the results those of a
// rebuild of the live nodes. Every method calls it before it reads q.
// Without deleted nodes q is returned as it is, but for another index's
// live set, which becomes a plain set (filter.Set.Plain).
func Visible(ix *index.Index, q Query) Query {
	if q.Allow.Isolated() && (ix.Deleted() == 0 || q.Allow != liveSet(ix)) {
		q.Allow = q.Allow.Plain() // another index's live set: it says nothing of ix's graphs
	}
	if ix.Deleted() == 0 {
		return q
	}
	live := liveSet(ix)
	if q.Allow == nil || q.Allow == live {
		q.Allow = live
		return q
	}
	q.Allow = narrowed(q.Allow, live)
	return q
}

// liveSet is ix's live nodes, made once per index.
func liveSet(ix *index.Index) *filter.Set {
	return ix.Memo("retrieve.live", func() any { return filter.Live(ix.N(), ix.DeletedWords()) }).(*filter.Set)
}

// narrowing is a set's last narrowing to a live set, kept on the set so
// that the queries sharing a filter share one narrowed set (and what
// methods memoize on it), and so that narrowing it again is free.
type narrowing struct {
	mu   sync.Mutex
	live *filter.Set
	out  *filter.Set
}

// narrowed is allow ∩ live.
func narrowed(allow, live *filter.Set) *filter.Set {
	if allow.N() != live.N() {
		return allow // CheckAllow refuses it, naming both sizes
	}
	nw := allow.Memo("retrieve.narrowing", func() any { return &narrowing{} }).(*narrowing)
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if nw.live == live {
		return nw.out
	}
	out := filter.Intersect(allow, live)
	out.Memo("retrieve.narrowing", func() any { return &narrowing{live: live, out: out} }) // out narrows to itself
	nw.live, nw.out = live, out
	return out
}
