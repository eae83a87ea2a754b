package lexical

import (
	"context"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/gleaner-rag/gleaner/internal/parallel"
)

// A live index appends documents commit by commit. Copying every posting
// list to append a few documents to the end of each (a CSR array cannot
// grow in place) made a commit cost the whole index, and its fresh
// memory the page faults of it. Documents appended to a Postings go into
// small segments instead, after the base arrays. The newest segments
// merge as a binary counter does (mergeTail: two of about one size make
// one of twice it), so a posting is copied about log₂ of the segments'
// documents over the batch's times, not once every few commits, and the
// segments merge into the base once they hold more than an eighth of the
// documents (Flat): a commit costs what it adds, amortised. Readers walk a term's base list, then each
// segment's: documents ascend across them. What is written to disk is
// always flat.

// maxSegments is the most segments a Postings holds: past it the newest
// merge whatever their sizes.
const maxSegments = 8

// mergeTail merges the newest two segments while the older holds no more
// postings than the newer, and while there are more than maxSegments.
func mergeTail(ctx context.Context, segs []*segment) []*segment {
	for k := len(segs); k > 1 && (len(segs[k-2].doc) <= len(segs[k-1].doc) || k > maxSegments); k = len(segs) {
		segs = append(segs[:k-2], mergeSegments(ctx, segs[k-2:]))
	}
	return segs
}

// segment is the postings of documents appended after the base arrays, in
// CSR form over the term ids it holds.
type segment struct {
	first uint32  // its first document (all of its documents are ≥ first)
	terms []int32 // the term ids it holds, ascending
	ptr   []int64 // term terms[i]'s postings are doc[ptr[i]:ptr[i+1]]
	doc   []uint32
	tf    []uint32
	// impacts of its lists (impacts.go), shared by every Postings that
	// holds the segment.
	impacts *impactCache
}

// list is term t's postings in the segment (empty when it has none).
func (s *segment) list(t int) (docs, tfs []uint32) {
	i := sort.Search(len(s.terms), func(i int) bool { return int(s.terms[i]) >= t })
	if i == len(s.terms) || int(s.terms[i]) != t {
		return nil, nil
	}
	return s.doc[s.ptr[i]:s.ptr[i+1]], s.tf[s.ptr[i]:s.ptr[i+1]]
}

// flatCache is a Postings's flat form, made once.
type flatCache struct {
	mu sync.Mutex
	p  atomic.Pointer[Postings]
}

// base is term t's postings in the base arrays.
func (p *Postings) base(t int) (docs, tfs []uint32) {
	if t >= len(p.Ptr)-1 {
		return nil, nil // a word added after the base
	}
	return p.Doc[p.Ptr[t]:p.Ptr[t+1]], p.TF[p.Ptr[t]:p.Ptr[t+1]]
}

// eachList calls fn with term t's postings, base then segments, in
// ascending document order (empty lists skipped).
func (p *Postings) eachList(t int, fn func(docs, tfs []uint32)) {
	if docs, tfs := p.base(t); len(docs) > 0 {
		fn(docs, tfs)
	}
	for _, s := range p.segs {
		if docs, tfs := s.list(t); len(docs) > 0 {
			fn(docs, tfs)
		}
	}
}

// HoldsAny reports whether a document that keep accepts holds term t,
// stopping at the first.
func (p *Postings) HoldsAny(t int, keep func(d uint32) bool) bool {
	if docs, _ := p.base(t); slices.ContainsFunc(docs, keep) {
		return true
	}
	for _, s := range p.segs {
		if docs, _ := s.list(t); slices.ContainsFunc(docs, keep) {
			return true
		}
	}
	return false
}

// DocFreq is the number of documents holding term t.
func (p *Postings) DocFreq(t int) int64 {
	var n int64
	p.eachList(t, func(docs, _ []uint32) { n += int64(len(docs)) })
	return n
}

// NumPostings is the number of (term, document) postings.
func (p *Postings) NumPostings() int {
	n := len(p.Doc)
	for _, s := range p.segs {
		n += len(s.doc)
	}
	return n
}

// Segments is how many segments follow the base arrays (0: flat).
func (p *Postings) Segments() int { return len(p.segs) }

// Flat is p in one CSR over a sorted term table, as BuildPostings makes
// it over the same documents: p itself when it has no segment, else a copy
// made once (p's term ids then differ from it: LSA.Remap maps between
// them).
func (p *Postings) Flat() *Postings { return p.flatFor(context.Background()) }

// flatFor is Flat, its work paced by ctx (parallel.Yield).
func (p *Postings) flatFor(ctx context.Context) *Postings {
	if len(p.segs) == 0 && p.Terms.Added() == 0 {
		return p
	}
	if p.flat == nil {
		return p.flatten(ctx) // a Postings not made by Update (no cache)
	}
	if f := p.flat.p.Load(); f != nil {
		return f
	}
	p.flat.mu.Lock()
	defer p.flat.mu.Unlock()
	if f := p.flat.p.Load(); f == nil {
		p.flat.p.Store(p.flatten(ctx))
	}
	return p.flat.p.Load()
}

// Flattened is p's flat form if one was made (Flat: a checkpoint makes
// it), else p: an update from it keeps one copy of the postings in
// memory, not the segmented and the flat ones both.
func (p *Postings) Flattened() *Postings {
	if p.flat != nil {
		if f := p.flat.p.Load(); f != nil {
			return f
		}
	}
	return p
}

// flatten merges the base and the segments over the sorted union of the
// terms. ctx only paces the work (parallel.Yield).
func (p *Postings) flatten(ctx context.Context) *Postings {
	order := p.Terms.sortedOrder()
	q := &Postings{Terms: TermTable{Off: make([]int64, 1, len(order)+1)}, DocLen: p.DocLen}
	q.Ptr = make([]int64, 1, len(order)+1)
	q.Doc = make([]uint32, 0, p.NumPostings())
	q.TF = make([]uint32, 0, p.NumPostings())
	for i, t := range order {
		q.Terms.Blob = append(q.Terms.Blob, p.Terms.Term(int(t))...)
		q.Terms.Off = append(q.Terms.Off, int64(len(q.Terms.Blob)))
		p.eachList(int(t), func(docs, tfs []uint32) {
			q.Doc, q.TF = append(q.Doc, docs...), append(q.TF, tfs...)
		})
		q.Ptr = append(q.Ptr, int64(len(q.Doc)))
		if i%1024 == 0 {
			parallel.Yield(ctx)
		}
	}
	return q
}

// newSegment holds the added documents' postings (numbered from first),
// over terms, which holds every word of them.
func newSegment(fresh addedPostings, terms TermTable, first uint32) *segment {
	ids := make([]int32, len(fresh.words))
	for i, w := range fresh.words {
		ids[i] = int32(terms.Lookup(w))
	}
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(ids[a] - ids[b]) })
	s := &segment{first: first, ptr: make([]int64, 1, len(ids)+1), impacts: &impactCache{}}
	for _, i := range order {
		s.terms = append(s.terms, ids[i])
		for _, e := range fresh.docs[fresh.words[i]] {
			s.doc, s.tf = append(s.doc, e.doc), append(s.tf, e.tf)
		}
		s.ptr = append(s.ptr, int64(len(s.doc)))
	}
	return s
}

// mergeSegments is the segments as one (their documents ascend from
// segs[0] on). ctx only paces the work (parallel.Yield).
func mergeSegments(ctx context.Context, segs []*segment) *segment {
	nt, np := 0, 0
	for _, s := range segs {
		nt, np = nt+len(s.terms), np+len(s.doc)
	}
	terms := make([]int32, 0, nt)
	for _, s := range segs {
		terms = append(terms, s.terms...)
	}
	slices.Sort(terms)
	terms = slices.Compact(terms)
	out := &segment{first: segs[0].first, terms: terms, ptr: make([]int64, 1, len(terms)+1),
		doc: make([]uint32, 0, np), tf: make([]uint32, 0, np), impacts: &impactCache{}} // at their size: grown by doubling they cost twice
	at := make([]int, len(segs)) // each segment's next term
	for i, t := range terms {
		if i%1024 == 0 {
			parallel.Yield(ctx)
		}
		for k, s := range segs {
			if at[k] < len(s.terms) && s.terms[at[k]] == t {
				lo, hi := s.ptr[at[k]], s.ptr[at[k]+1]
				out.doc, out.tf = append(out.doc, s.doc[lo:hi]...), append(out.tf, s.tf[lo:hi]...)
				at[k]++
			}
		}
		out.ptr = append(out.ptr, int64(len(out.doc)))
	}
	return out
}

// segmentOf is the segment holding document d (nil: the base).
func (p *Postings) segmentOf(d uint32) *segment {
	i := sort.Search(len(p.segs), func(i int) bool { return p.segs[i].first > d })
	if i == 0 {
		return nil
	}
	return p.segs[i-1]
}

// idfs is every term's BM25 idf over n documents, ln(1 + (n − df + 0.5) /
// (df + 0.5)), its document frequency counted in place (a live index
// makes one per commit: a count array beside it doubled what it cost).
func (p *Postings) idfs(n int) []float32 {
	if n >= 1<<24 { // counts past float32's whole numbers
		df := make([]int64, p.Terms.Len())
		p.eachDocFreq(func(t int, c int64) { df[t] += c })
		idf := make([]float32, len(df))
		for t, c := range df {
			idf[t] = idfOf(n, float64(c))
		}
		return idf
	}
	idf := make([]float32, p.Terms.Len())
	p.eachDocFreq(func(t int, c int64) { idf[t] += float32(c) })
	for t, c := range idf {
		idf[t] = idfOf(n, float64(c))
	}
	return idf
}

// eachDocFreq calls fn with each term and its number of documents in the
// base, then in each segment.
func (p *Postings) eachDocFreq(fn func(t int, c int64)) {
	for t := range len(p.Ptr) - 1 {
		fn(t, p.Ptr[t+1]-p.Ptr[t])
	}
	for _, s := range p.segs {
		for i, t := range s.terms {
			fn(int(t), s.ptr[i+1]-s.ptr[i])
		}
	}
}

// idfOf is the idf of a term in df of n documents.
func idfOf(n int, df float64) float32 {
	return float32(math.Log(1 + (float64(n)-df+0.5)/(df+0.5)))
}
