package ketrag

import (
	"context"
	"slices"

	"github.com/gleaner-rag/gleaner/retrieve"
	"github.com/gleaner-rag/gleaner/retrieve/filter"
)

// scope is what one query may draw on: the whole of KET-RAG's structures,
// or (a filtered query) only the parts derived from allowed chunks alone.
//
// KET-RAG's structures merge what many chunks say: an entity's name, type
// and description come from every text unit that mentions it, a
// relationship's weight sums over units, a keyword's vector averages the
// sentences of every chunk that holds it, and a text unit can span
// several chunks. None of that can be split back per chunk. The extractor
// read whole units (merged core chunks), not pieces, so under a filter an
// entity is usable only when every unit it came from has only allowed
// chunks, and a relationship only when its units do and both its ends are
// usable. A text unit (piece) is quoted only when all its chunks are
// allowed, and a keyword used only when all its chunks are. Entity ranks
// (relationship counts) count the usable relationships. So nothing in a filtered context, ranking or score
// depends on a filtered-out chunk's text; the price is recall, since a
// structure shared with a hidden chunk is left out whole. Which chunks
// form the skeleton was decided at build time over every chunk (PageRank
// over the chunk graph), like the vectors' basis: a statistical trace,
// not text.
type scope struct {
	full      bool
	entityOK  []bool  // usable entities (nil when full)
	keywordOK []bool  // usable keywords (nil when full)
	relOK     []bool  // usable relationships (nil when full)
	rank      []int32 // each entity's usable relationships
}

// scopeOf is the query's scope, made once per filter set.
func (m *ketrag) scopeOf(q retrieve.Query) (*scope, error) {
	if q.Allow == nil {
		return &scope{full: true, rank: m.k.EntityRank}, nil
	}
	if err := retrieve.CheckAllow(m.ix, q); err != nil {
		return nil, err
	}
	return q.Allow.Memo("ketrag.scope", func() any { return newScope(m.k, q.Allow) }).(*scope), nil
}

func newScope(k *KETRAG, allow *filter.Set) *scope {
	has := func(c int32) bool { return allow.Has(int(c)) }
	unitOK := make([]bool, len(k.UnitPtr)-1)
	for u := range unitOK {
		unitOK[u] = allOf(k.Core[k.UnitPtr[u]:k.UnitPtr[u+1]], has)
	}
	// An entity or relationship lists at least one piece of every unit it
	// was extracted from.
	piecesOK := func(ps []int32) bool {
		return len(ps) > 0 && allOf(ps, func(p int32) bool { return unitOK[k.PieceUnit[p]] })
	}
	s := &scope{entityOK: make([]bool, k.EntityNames.Len()), keywordOK: make([]bool, k.Keywords.Len()),
		relOK: make([]bool, len(k.RelSrc)), rank: make([]int32, k.EntityNames.Len())}
	for e := range s.entityOK {
		s.entityOK[e] = piecesOK(k.EntityPieces.Neighbors(e))
	}
	for r := range s.relOK {
		a, b := k.RelSrc[r], k.RelDst[r]
		if s.relOK[r] = s.entityOK[a] && s.entityOK[b] && piecesOK(k.RelPieces.Neighbors(r)); s.relOK[r] {
			s.rank[a]++
			s.rank[b]++
		}
	}
	for w := range s.keywordOK {
		cs := k.KeywordChunks.Neighbors(w)
		s.keywordOK[w] = len(cs) > 0 && allOf(cs, has)
	}
	return s
}

func allOf(xs []int32, ok func(int32) bool) bool {
	return !slices.ContainsFunc(xs, func(x int32) bool { return !ok(x) })
}

// topRows is the k rows of a vector table (key names its bound copy) of
// highest inner product with qv among the rows usable says the scope may
// use: the backend's scan over the whole table, or a host scan of the
// usable rows.
func (m *ketrag) topRows(ctx context.Context, s *scope, key string, vecs []float32, n int, usable []bool, qv []float32, k int) ([]retrieve.Hit, error) {
	if s.full {
		return retrieve.TopRows(ctx, m.be, m.ix, key, vecs, n, m.ix.Meta.Dims, qv, k)
	}
	return retrieve.TopRowsWhere(vecs, m.ix.Meta.Dims, func(r int32) bool { return usable[r] }, qv, k), ctx.Err()
}

// relationships is entity e's relationships the scope may use.
func (s *scope) relationships(k *KETRAG, e int32) []int32 {
	rs := k.EntityRels.Neighbors(int(e))
	if s.full {
		return rs
	}
	return slices.DeleteFunc(slices.Clone(rs), func(r int32) bool { return !s.relOK[r] })
}
