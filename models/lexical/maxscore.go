package lexical

import (
	"cmp"
	"math"
	"slices"
	"sync/atomic"

	"github.com/gleaner-rag/gleaner/engine"
)

// MaxScore (Turtle and Flood, 1995, as Lucene runs it) finds BM25's top k
// without scoring every document that matches a query term. Each term has
// an upper bound on what it adds to a score. Sorted by bound, the terms
// whose bounds sum to at most the current k-th score are non-essential: a
// document that holds none of the other, essential, terms cannot enter the
// top k, so only the essential terms' postings propose candidates, and the
// rest are searched for those candidates alone. Long keyword queries whose
// common terms have long postings then read the rare terms' postings and a
// few positions of the long ones (prunable decides when that pays).
//
// The result equals the exhaustive search exactly: a candidate's score is
// summed over the query's terms in query order, as Search sums it, and a
// document is skipped only when its bound cannot beat the k-th score even
// with float32 rounding (the bounds carry a margin for it). A later
// document never wins a tie against a kept one (ties go to the lower
// number, and documents come in increasing order), so a bound equal to the
// threshold prunes too.

// termBound is the largest score term t adds to any document, computed on
// first use and cached (bits of a positive float32; 0 means not yet).
func (s *BM25) termBound(t int) float32 {
	s.bounds.once.Do(func() { s.bounds.b = make([]uint32, s.p.Terms.Len()) })
	bound := &s.bounds.b[t]
	if b := atomic.LoadUint32(bound); b != 0 {
		return math.Float32frombits(b)
	}
	idf := s.idf[t]
	var m float32
	s.p.eachList(t, func(docs, tfs []uint32) {
		for i, d := range docs {
			tf := float32(tfs[i])
			m = max(m, idf*tf/(tf+s.norm(d)))
		}
	})
	if m > 0 {
		atomic.StoreUint32(bound, math.Float32bits(m))
	}
	return m
}

// candidateCost is what MaxScore spends on a posting it visits, in units
// of what exhaustive scoring spends on one (measured on the scale corpus
// at 10⁵ passages: about 4).
const candidateCost = 4

// prunable reports whether MaxScore is likely to be faster than scoring
// every match. A term held by at least k documents gives each of them at
// least idf/(1 + the largest length norm), so the k-th score cannot fall
// below the largest such floor; the lowest-bound terms whose bounds sum
// under it never propose candidates, and they must hold more than
// candidateCost times the postings of the rest. It decides speed only:
// both searches return the same hits.
func (s *BM25) prunable(ids []int, k int) bool {
	type term struct {
		bound float32
		n     int64
	}
	ts := make([]term, 0, len(ids))
	var floor float32
	var total int64
	for _, t := range ids {
		n := s.p.DocFreq(t)
		ts = append(ts, term{s.termBound(t), n})
		total += n
		if n >= int64(k) {
			floor = max(floor, s.idf[t]/(1+s.maxNorm))
		}
	}
	slices.SortFunc(ts, func(a, b term) int { return cmp.Compare(a.bound, b.bound) })
	var below float32
	var skipped int64
	for _, t := range ts {
		if below += t.bound; below >= floor {
			break
		}
		skipped += t.n
	}
	return skipped > candidateCost*(total-skipped)
}

// cursor walks one query term's postings: docs and tfs, then each list
// of rest (segments' lists, whose documents follow).
type cursor struct {
	term  int
	idf   float32
	mult  int     // how often the term occurs in the query
	bound float64 // the term's bound times mult
	docs  []uint32
	tfs   []uint32
	pos   int
	rest  [][2][]uint32
}

func (c *cursor) doc() uint32 {
	if c.pos < len(c.docs) {
		return c.docs[c.pos]
	}
	return math.MaxUint32
}

// next moves one posting on, to the next list at the end of one.
func (c *cursor) next() {
	if c.pos++; c.pos == len(c.docs) && len(c.rest) > 0 {
		c.docs, c.tfs, c.pos, c.rest = c.rest[0][0], c.rest[0][1], 0, c.rest[1:]
	}
}

// seek moves to the first posting at or after d by galloping, so a long
// list is crossed in steps that grow until they overshoot.
func (c *cursor) seek(d uint32) {
	for len(c.rest) > 0 && (len(c.docs) == 0 || c.docs[len(c.docs)-1] < d) {
		c.docs, c.tfs, c.pos, c.rest = c.rest[0][0], c.rest[0][1], 0, c.rest[1:] // d is past this list
	}
	if c.pos >= len(c.docs) || c.docs[c.pos] >= d {
		return
	}
	lo, step := c.pos, 1
	hi := lo + 1
	for hi < len(c.docs) && c.docs[hi] < d {
		lo = hi
		step *= 2
		hi = lo + step
	}
	hi = min(hi, len(c.docs))
	c.pos = lo + 1 + sortSearch(c.docs[lo+1:hi], d)
}

// sortSearch is the first index of docs (sorted) holding a value ≥ d.
func sortSearch(docs []uint32, d uint32) int {
	lo, hi := 0, len(docs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if docs[m] < d {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// maxScore is SearchTerms's top k by MaxScore over looked-up term ids in
// query order (repeats kept, unknown terms dropped).
func (s *BM25) maxScore(ids []int, k int) []engine.Hit {
	q := s.newMaxQuery(ids)
	top := engine.NewTopK(k)
	essential := 0 // q.curs[essential:] propose candidates
	for {
		theta, full := top.Threshold()
		if full {
			for essential < len(q.curs) && !q.canBeat(0, q.below[essential], theta) {
				essential++
			}
			if essential == len(q.curs) {
				break // no document left can beat the k-th
			}
		}
		d := uint32(math.MaxUint32)
		for _, c := range q.curs[essential:] {
			d = min(d, c.doc())
		}
		if d == math.MaxUint32 {
			break
		}
		if sc, ok := q.score(s, essential, d, theta, full); ok {
			top.Push(int32(d), sc)
		}
		for i := essential; i < len(q.curs); i++ {
			if q.curs[i].doc() == d {
				q.curs[i].next()
			}
		}
	}
	return top.Results()
}

// maxQuery is one query's cursors, one per distinct term, ordered by bound
// (lowest first).
type maxQuery struct {
	curs    []cursor
	occ     []int     // each query term's cursor, in query order
	below   []float64 // below[i]: the bounds of curs[:i+1] summed
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
		c := cursor{term: t, idf: s.idf[t], mult: 1}
		s.p.eachList(t, func(docs, tfs []uint32) {
			if c.docs == nil {
				c.docs, c.tfs = docs, tfs
			} else {
				c.rest = append(c.rest, [2][]uint32{docs, tfs})
			}
		})
		q.curs = append(q.curs, c)
	}
	for i := range q.curs {
		q.curs[i].bound = float64(s.termBound(q.curs[i].term)) * float64(q.curs[i].mult)
	}
	slices.SortStableFunc(q.curs, func(a, b cursor) int { return cmp.Compare(a.bound, b.bound) })
	for i, c := range q.curs {
		at[c.term] = i
	}
	q.occ = make([]int, len(ids))
	for i, t := range ids {
		q.occ[i] = at[t]
	}
	q.below = make([]float64, len(q.curs))
	var sum float64
	for i, c := range q.curs {
		sum += c.bound
		q.below[i] = sum
	}
	q.contrib = make([]float32, len(q.curs))
	// A float32 sum of m terms lies within (m−1)·2⁻²⁴ of the exact sum,
	// relative to the sum of magnitudes; 2⁻²² per term covers that and the
	// rounding of the float64 sums here.
	q.margin = 1 + float64(len(ids)+1)*0x1p-22
	return q
}

// canBeat reports whether a document with known score contributions
// (exact sum) and at most bound more could score above theta in float32.
func (q *maxQuery) canBeat(known, bound float64, theta float32) bool {
	return (known+bound)*q.margin > float64(theta)
}

// score is document d's score, summed over the query's terms in query
// order as Search sums it; ok is false when d cannot enter a full top k
// with threshold theta. The non-essential terms are sought from the
// highest bound down, and the search stops once what is known plus the
// bounds still unsought cannot beat theta.
func (q *maxQuery) score(s *BM25, essential int, d uint32, theta float32, full bool) (float32, bool) {
	var known float64
	for i := essential; i < len(q.curs); i++ {
		q.contrib[i] = 0
		if c := &q.curs[i]; c.doc() == d {
			q.contrib[i] = s.contribution(c, d)
			known += float64(q.contrib[i]) * float64(c.mult)
		}
	}
	for i := essential - 1; i >= 0; i-- {
		if full && !q.canBeat(known, q.below[i], theta) {
			return 0, false
		}
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

// contribution is what the cursor's term adds to d's score, computed as
// addTerm computes it.
func (s *BM25) contribution(c *cursor, d uint32) float32 {
	tf := float32(c.tfs[c.pos])
	return c.idf * tf / (tf + s.norm(d))
}
