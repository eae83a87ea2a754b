package lexical

import "sync"

// A live index makes a new BM25 at every commit (each document changes the
// idf and the length norms), and MaxScore's block bounds were made per
// BM25, by the first query that needed them, from every posting of its
// terms. With a commit every 50 ms while ingesting, most queries paid that
// pass: over 70,000 synthetic passages a query on a fresh BM25 took 9
// times a warm one's time. Lucene stores each block's impacts in the index
// instead; so does this file, in memory: a list's impacts are made once
// and shared by every BM25 over that list (a commit that appends shares
// the base's lists and the older segments), and a BM25 bounds a block
// from its few impacts rather than its 128 postings.

// listImpacts is one postings list cut into blocks of blockPostings
// postings, with each block's impacts: the (tf, length) pairs of its
// postings that no other posting of the block matches or beats on both
// (an equal or higher tf and an equal or shorter length). A contribution
// grows with tf and falls with length under any idf and norms, so a
// block's largest is one of its impacts' (impactBound adds the margin
// float32 rounding needs).
type listImpacts struct {
	last  []uint32 // each block's last document
	end   []int32  // block i's impacts are pairs[end[i-1]:end[i]]
	pairs []impact
}

type impact struct{ tf, length uint32 }

// impactCache holds the impacts of one set of lists (a Postings's base
// arrays, or a segment's) by term id. Lists of one block are not held:
// made again each time from at most blockPostings postings, since holding
// every rare term queried would pin memory for much of the vocabulary.
type impactCache struct{ lists sync.Map }

// of is the impacts of term t's list docs (tfs beside it), made on first
// use; c may be nil (nothing held). Concurrent first uses may each make
// them; one is kept.
func (c *impactCache) of(t int, docs, tfs, docLen []uint32) *listImpacts {
	if c == nil || len(docs) <= blockPostings {
		return makeListImpacts(docs, tfs, docLen)
	}
	if v, ok := c.lists.Load(t); ok {
		return v.(*listImpacts)
	}
	v, _ := c.lists.LoadOrStore(t, makeListImpacts(docs, tfs, docLen))
	return v.(*listImpacts)
}

// makeListImpacts cuts a list into blocks and finds each block's impacts.
func makeListImpacts(docs, tfs, docLen []uint32) *listImpacts {
	nb := (len(docs) + blockPostings - 1) / blockPostings
	li := &listImpacts{last: make([]uint32, 0, nb), end: make([]int32, 0, nb), pairs: make([]impact, 0, nb)}
	for lo := 0; lo < len(docs); lo += blockPostings {
		hi := min(lo+blockPostings, len(docs))
		from := len(li.pairs)
		for i := lo; i < hi; i++ {
			li.pairs = addImpact(li.pairs, from, impact{tfs[i], docLen[docs[i]]})
		}
		li.last = append(li.last, docs[hi-1])
		li.end = append(li.end, int32(len(li.pairs)))
	}
	return li
}

// addImpact adds p to the block's impacts pairs[from:] unless one of them
// matches or beats it, dropping those it beats. A block keeps a few.
func addImpact(pairs []impact, from int, p impact) []impact {
	for _, q := range pairs[from:] {
		if q.tf >= p.tf && q.length <= p.length {
			return pairs
		}
	}
	kept := pairs[:from]
	for _, q := range pairs[from:] {
		if !(p.tf >= q.tf && p.length <= q.length) {
			kept = append(kept, q)
		}
	}
	return append(kept, p)
}

// impactBound is the most a block with these impacts adds to a score
// under idf and norms (normOf, by length). Each contribution is computed
// as contribution computes it; a posting an impact beats may still round
// up to a few units in the last place above it (three roundings each),
// so the largest is raised by 2⁻²⁰ of itself, which covers that and the
// rounding of the raise.
func impactBound(pairs []impact, idf float32, normOf []float32) float32 {
	var m float32
	for _, p := range pairs {
		tf := float32(p.tf)
		m = max(m, idf*tf/(tf+normOf[p.length]))
	}
	return float32(float64(m) * (1 + 0x1p-20))
}

// eachImpacts calls fn with the impacts of term t's lists, base then
// segments, in document order (empty lists skipped).
func (p *Postings) eachImpacts(t int, fn func(*listImpacts)) {
	if docs, tfs := p.base(t); len(docs) > 0 {
		fn(p.impacts.of(t, docs, tfs, p.DocLen))
	}
	for _, s := range p.segs {
		if docs, tfs := s.list(t); len(docs) > 0 {
			fn(s.impacts.of(t, docs, tfs, p.DocLen))
		}
	}
}
