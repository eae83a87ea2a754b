package lexical

import (
	"cmp"
	"math"
	"slices"

	"github.com/gleaner-rag/gleaner/engine"
)

// maxScore is SearchTerms's top k by MaxScore over looked-up term ids in
// query order (repeats kept, unknown terms dropped), run over windows of
// documents (block-max MaxScore, after Lucene's MaxScoreBulkScorer).
// Within a window each term adds at most the largest bound of its blocks
// there, far tighter than its bound over the whole index: the terms are
// split into essential and not by their window bounds, and a window whose
// bounds sum to at most the k-th score is passed over whole. A window
// ends where the first of the last window's essential terms' blocks ends:
// those are the rare terms, whose blocks span many documents, so the
// common terms' many blocks do not make many small windows.
func (s *BM25) maxScore(ids []int, k int) []engine.Hit {
	q := s.newMaxQuery(ids)
	top := engine.NewTopK(k)
	start := uint32(math.MaxUint32)
	for i := range q.curs {
		start = min(start, q.curs[i].doc())
	}
	for essential := 0; start != math.MaxUint32; {
		theta, full := top.Threshold()
		end := q.window(start, essential, theta, full)
		essential = q.scoreWindow(s, top, start, end)
		if end == math.MaxUint32 {
			break
		}
		start = end + 1
	}
	return top.Results()
}

// maxQuery is one query's cursors, one per distinct term.
type maxQuery struct {
	curs    []cursor
	occ     []int     // each query term's cursor, in query order
	order   []int     // the cursors by window bound, lowest first
	below   []float64 // below[i]: the window bounds of order[:i+1] summed
	contrib []float32 // the candidate's score from each cursor's term
	margin  float64
}

func (s *BM25) newMaxQuery(ids []int) *maxQuery {
	q := &maxQuery{}
	at := map[int]int{}
	for _, t := range ids {
		if i, ok := at[t]; ok {
			q.curs[i].mult++
			continue
		}
		at[t] = len(q.curs)
		c := cursor{term: t, idf: s.idf[t], mult: 1, blocks: s.termStats(t).blocks}
		s.p.eachList(t, func(docs, tfs []uint32) {
			if c.docs == nil {
				c.docs, c.tfs = docs, tfs
			} else {
				c.rest = append(c.rest, [2][]uint32{docs, tfs})
			}
		})
		q.curs = append(q.curs, c)
	}
	q.occ = make([]int, len(ids))
	for i, t := range ids {
		q.occ[i] = at[t]
	}
	q.order = make([]int, len(q.curs))
	for i := range q.order {
		q.order[i] = i
	}
	q.below = make([]float64, len(q.curs))
	q.contrib = make([]float32, len(q.curs))
	// A float32 sum of m terms lies within (m−1)·2⁻²⁴ of the exact sum,
	// relative to the sum of magnitudes; 2⁻²² per term covers that and the
	// rounding of the float64 sums here.
	q.margin = 1 + float64(len(ids)+1)*0x1p-22
	return q
}

// window ends the window from start where the first block of the terms
// order[lead:] ends (lead: the last window's first essential term, at most
// the last term), never before start; sets each cursor's bound within the
// window; orders the cursors by it and sums the bounds from the lowest up.
// Where a term that the bounds make essential has a block ending sooner,
// the window ends there instead and the bounds are made again: an
// essential term is bounded by one block, and a rare term's block (which
// may span the index) does not loosen the common terms' bounds to their
// maxima over the index.
func (q *maxQuery) window(start uint32, lead int, theta float32, full bool) (end uint32) {
	end = math.MaxUint32
	for _, i := range q.order[min(lead, len(q.order)-1):] {
		if b, ok := q.curs[i].blockAt(start); ok {
			end = min(end, b.last)
		}
	}
	end = max(end, start)
	for range windowShrinks {
		q.bound(start, end)
		shorter := end
		for _, i := range q.order[q.essentialFrom(0, theta, full):] {
			if b, ok := q.curs[i].blockAt(start); ok {
				shorter = min(shorter, b.last)
			}
		}
		if shorter == end {
			return end
		}
		end = shorter
	}
	q.bound(start, end)
	return end
}

// windowShrinks bounds how often window ends a window sooner (each time
// bounds every term anew); any end is correct, a sooner one only tighter.
const windowShrinks = 4

// bound sets each cursor's bound within [start, end], orders the cursors
// by it and sums the bounds from the lowest up.
func (q *maxQuery) bound(start, end uint32) {
	for i := range q.curs {
		q.curs[i].window = q.curs[i].boundIn(start, end)
	}
	slices.SortStableFunc(q.order, func(a, b int) int { return cmp.Compare(q.curs[a].window, q.curs[b].window) })
	var sum float64
	for i, c := range q.order {
		sum += q.curs[c].window
		q.below[i] = sum
	}
}

// scoreWindow scores the documents of [start, end] that the essential
// terms propose: order[essential:], the fewest highest-bound terms whose
// window bounds could lift a document past the k-th score. It returns the
// first essential term at the end. The essential terms are first sought
// to start (a term not essential before may lag behind).
func (q *maxQuery) scoreWindow(s *BM25, top *engine.TopK, start, end uint32) int {
	theta, full := top.Threshold()
	essential := q.essentialFrom(0, theta, full)
	for _, i := range q.order[essential:] {
		q.curs[i].seek(start)
	}
	for essential < len(q.order) {
		d := uint32(math.MaxUint32)
		for _, i := range q.order[essential:] {
			d = min(d, q.curs[i].doc())
		}
		if d == math.MaxUint32 || d > end {
			break
		}
		if sc, ok := q.score(s, essential, d, theta, full); ok {
			top.Push(int32(d), sc)
		}
		for _, i := range q.order[essential:] {
			if q.curs[i].doc() == d {
				q.curs[i].next()
			}
		}
		theta, full = top.Threshold()
		essential = q.essentialFrom(essential, theta, full)
	}
	return essential
}

// essentialFrom is the first of order's cursors, from from on, that must
// propose candidates: those below it cannot, all together, lift a document
// past the k-th score theta. len(order) means no document can.
func (q *maxQuery) essentialFrom(from int, theta float32, full bool) int {
	for full && from < len(q.order) && !q.canBeat(0, q.below[from], theta) {
		from++
	}
	return from
}

// canBeat reports whether a document with known score contributions
// (exact sum) and at most bound more could score above theta in float32.
func (q *maxQuery) canBeat(known, bound float64, theta float32) bool {
	return (known+bound)*q.margin > float64(theta)
}

// score is document d's score, summed over the query's terms in query
// order as Search sums it; ok is false when d cannot enter a full top k
// with threshold theta. The non-essential terms are sought from the
// highest window bound down, and the search stops once what is known
// plus the bounds still unsought cannot beat theta.
func (q *maxQuery) score(s *BM25, essential int, d uint32, theta float32, full bool) (float32, bool) {
	var known float64
	for _, i := range q.order[essential:] {
		q.contrib[i] = 0
		if c := &q.curs[i]; c.doc() == d {
			q.contrib[i] = s.contribution(c, d)
			known += float64(q.contrib[i]) * float64(c.mult)
		}
	}
	for j := essential - 1; j >= 0; j-- {
		if full && !q.canBeat(known, q.below[j], theta) {
			return 0, false
		}
		i := q.order[j]
		c := &q.curs[i]
		q.contrib[i] = 0
		if c.seek(d); c.doc() == d {
			q.contrib[i] = s.contribution(c, d)
			known += float64(q.contrib[i]) * float64(c.mult)
		}
	}
	var sc float32
	for _, i := range q.occ {
		sc += q.contrib[i]
	}
	return sc, true
}
