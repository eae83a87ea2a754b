package lexical

import (
	"cmp"
	"math"
	"slices"
	"sync/atomic"
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
	var m float32
	if st := s.termStats(t); len(st.top) > 0 {
		m = st.top[0]
	}
	if m > 0 {
		atomic.StoreUint32(bound, math.Float32bits(m))
	}
	return m
}

// blockPostings is how many consecutive postings of a term share one
// stored bound (Lucene's block size).
const blockPostings = 128

// termBlock bounds up to blockPostings consecutive postings of one of a
// term's lists.
type termBlock struct {
	last uint32  // the block's last document
	max  float32 // at least the most any of its postings adds to a score
}

// termStats is a term's postings cut into blocks (each list on its own, in
// document order) with a bound on each block's largest contribution (that
// contribution, computed as contribution computes it, raised by 2⁻²⁰ of
// itself), and those bounds from the highest down. Each block holds a
// posting at its bound within that margin, so a term's k-th largest
// contribution is about top[k-1] or more.
type termStats struct {
	blocks []termBlock
	top    []float32
}

// termStats is made on first use and cached (12 bytes per 128 postings
// of the terms queried), except for a term of one block: it is made
// again each time from at most blockPostings postings, since caching
// every rare term queried pinned about 200 bytes per term of the
// vocabulary. Concurrent first uses may each make it; one is kept.
func (s *BM25) termStats(t int) *termStats {
	if v, ok := s.bounds.stats.Load(t); ok {
		return v.(*termStats)
	}
	st := s.makeTermStats(t)
	if len(st.blocks) <= 1 {
		return st
	}
	v, _ := s.bounds.stats.LoadOrStore(t, st)
	return v.(*termStats)
}

// makeTermStats bounds the blocks of term t's lists from their impacts
// (impacts.go), which every BM25 over the same lists shares.
func (s *BM25) makeTermStats(t int) *termStats {
	idf := s.idf[t]
	st := &termStats{blocks: make([]termBlock, 0, (s.p.DocFreq(t)+blockPostings-1)/blockPostings)}
	s.p.eachImpacts(t, func(li *listImpacts) {
		from := int32(0)
		for i, last := range li.last {
			st.blocks = append(st.blocks, termBlock{last: last, max: impactBound(li.pairs[from:li.end[i]], idf, s.normOf)})
			from = li.end[i]
		}
	})
	st.top = make([]float32, len(st.blocks))
	for i, b := range st.blocks {
		st.top[i] = b.max
	}
	slices.SortFunc(st.top, func(a, b float32) int { return cmp.Compare(b, a) })
	return st
}

// candidateCost is what MaxScore spends on a posting it visits, in units
// of what exhaustive scoring spends on one (measured on the scale corpus
// at 10⁵ passages: about 4).
const candidateCost = 4

// postingsPerHit is how many postings a query must read for each of the
// k hits it keeps for prunable to expect the k-th score to reach the
// highest bound among its terms (a rare term's): once it is set, the block
// windows pass over most of the common terms' lists. Chosen on the scale
// corpus's dev questions and dev keyword queries (10⁴–10⁶ passages, k
// 10–256), where the rule came within 4 % of always picking the faster
// search; without it, within 6 %.
const postingsPerHit = 1024

// maxScoreTerms is the most distinct terms a query may have for MaxScore
// to run: its work per window and per candidate grows with the terms,
// and with hundreds of terms of like bounds it skips nothing (a 500-term
// query took 100 times exhaustive scoring's time).
const maxScoreTerms = 32

// prunable reports whether MaxScore is likely to be faster than scoring
// every match. A query of more than maxScoreTerms distinct terms is
// scored in full. Otherwise the k-th score must be expected to exceed the
// bounds of the terms holding most postings: the lowest-bound terms whose
// bounds sum under that floor never propose candidates, and they must
// hold more than candidateCost times the postings of the rest. A term
// held by at least k documents gives each at least idf/(1 + the largest
// length norm), and one of k blocks gives k documents at least its k-th
// block bound (less the bounds' 2⁻²⁰ margin), so the k-th score cannot
// fall below about the largest of those;
// a query reading postingsPerHit postings per hit is expected to reach
// its highest term bound. Terms of like bounds then still skip nothing.
// It decides speed only: both searches return the same hits.
func (s *BM25) prunable(ids []int, k int) bool {
	if len(ids) > maxScoreTerms && len(slices.Compact(slices.Sorted(slices.Values(ids)))) > maxScoreTerms {
		return false
	}
	type term struct {
		bound float32
		n     int64
	}
	ts := make([]term, 0, len(ids))
	var floor, strongest float32
	var total int64
	for _, t := range ids {
		n, bound := s.p.DocFreq(t), s.termBound(t)
		ts = append(ts, term{bound, n})
		total += n
		strongest = max(strongest, bound)
		if n < int64(k) {
			continue
		}
		floor = max(floor, s.idf[t]/(1+s.maxNorm))
		if k == 1 {
			floor = max(floor, bound)
		} else if n > int64(blockPostings*(k-1)) { // k blocks at least
			if top := s.termStats(t).top; len(top) >= k {
				floor = max(floor, top[k-1])
			}
		}
	}
	if int64(k) <= total/postingsPerHit {
		floor = max(floor, strongest)
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
	term   int
	idf    float32
	mult   int     // how often the term occurs in the query
	window float64 // the term's bound within the current window times mult
	docs   []uint32
	tfs    []uint32
	pos    int
	rest   [][2][]uint32
	blocks []termBlock // the term's block bounds
	blk    int         // the first block that may hold the current window's postings
}

func (c *cursor) doc() uint32 {
	if c.pos < len(c.docs) {
		return c.docs[c.pos]
	}
	return math.MaxUint32
}

// nextList moves to the start of the next list.
func (c *cursor) nextList() {
	c.docs, c.tfs, c.pos, c.rest = c.rest[0][0], c.rest[0][1], 0, c.rest[1:]
}

// next moves one posting on, to the next list at the end of one.
func (c *cursor) next() {
	if c.pos++; c.pos == len(c.docs) && len(c.rest) > 0 {
		c.nextList()
	}
}

// seek moves to the first posting at or after d by galloping, so a long
// list is crossed in steps that grow until they overshoot.
func (c *cursor) seek(d uint32) {
	for len(c.rest) > 0 && (len(c.docs) == 0 || c.docs[len(c.docs)-1] < d) {
		c.nextList() // d is past this list
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

// contribution is what the cursor's term adds to d's score, computed as
// addTerm computes it.
func (s *BM25) contribution(c *cursor, d uint32) float32 {
	tf := float32(c.tfs[c.pos])
	return c.idf * tf / (tf + s.norm(d))
}

// blockAt moves the cursor's block (not its posting) to the first block
// that may hold a posting at or after d, and returns it; ok is false past
// the last block. Blocks are passed over without reading postings, so a
// term that proposes no candidates costs one step per block.
func (c *cursor) blockAt(d uint32) (b termBlock, ok bool) {
	for c.blk < len(c.blocks) && c.blocks[c.blk].last < d {
		c.blk++
	}
	if c.blk == len(c.blocks) {
		return termBlock{}, false
	}
	return c.blocks[c.blk], true
}

// boundIn is the most the term adds to a document in [start, end], times
// its multiplicity: the largest bound of the blocks that may hold
// postings there, 0 when it has none there.
func (c *cursor) boundIn(start, end uint32) float64 {
	if _, ok := c.blockAt(start); !ok || c.doc() > end {
		return 0
	}
	m := c.blocks[c.blk].max
	for i := c.blk + 1; i < len(c.blocks) && c.blocks[i-1].last < end; i++ {
		m = max(m, c.blocks[i].max)
	}
	return float64(m) * float64(c.mult)
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
