package lexical

import (
	"fmt"
	"math"
	"sync"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/models"
)

// BM25Params are the Lucene BM25 parameters. Anserini's defaults, used for
// its published BEIR "flat" runs, are k1 = 0.9 and b = 0.4.
type BM25Params struct {
	K1 float64 `json:"k1"`
	B  float64 `json:"b"`
}

// DefaultBM25 returns Anserini's defaults.
func DefaultBM25() BM25Params { return BM25Params{K1: 0.9, B: 0.4} }

// MaxK1 bounds k1: far beyond any tuned value (0.5–3), and small enough
// that the float32 length norms stay finite, so no match scores 0.
const MaxK1 = 1000

// Validate rejects parameters outside BM25's meaningful range.
func (p BM25Params) Validate() error {
	if !(p.K1 >= 0 && p.K1 <= MaxK1) || !(p.B >= 0 && p.B <= 1) {
		return fmt.Errorf("bm25: need 0 ≤ k1 ≤ %d and 0 ≤ b ≤ 1, got k1=%v b=%v", MaxK1, p.K1, p.B)
	}
	return nil
}

// BM25 scores documents with Lucene's BM25 (Lucene ≥ 8, which drops the
// constant (k1+1) factor; rankings are unchanged):
//
//	score(q, d) = Σ_{t ∈ q} idf(t) · tf / (tf + k1·(1 − b + b·|d|/avgdl))
//	idf(t)      = ln(1 + (N − df + 0.5)/(df + 0.5))
//
// Query terms count with multiplicity, as Anserini's bag-of-words queries do.
// Document lengths are exact (Lucene stores them lossily in one byte; the
// effect on rankings is negligible). BM25 is safe for concurrent use.
type BM25 struct {
	prm BM25Params
	p   *Postings
	n   int // documents
	idf []float32
	// normOf is the length norm of a document of each length, up to the
	// longest (a norm depends on the length only): a live index makes a
	// BM25 per commit, and a norm per document was an array of the
	// index's size made anew each time.
	normOf []float32
	// bounds caches each term's largest contribution, made by the first
	// query that prunes; maxNorm is the largest length norm (maxscore.go).
	bounds  boundCache
	maxNorm float32
}

// boundCache is a term-indexed array made when first needed, and the
// terms' block bounds made so far (term → *termStats).
type boundCache struct {
	once  sync.Once
	b     []uint32
	stats sync.Map
}

// plainLength is a document length the norm table takes unchecked (4 MB).
const plainLength = 1 << 20

// checkLongest refuses a longest document length the postings cannot
// hold (a document's words are its term frequencies): the norm table
// has an entry per length up to it, and a corrupt length file must not
// make it gigabytes. Only a length past plainLength is checked, by the
// sum of every term frequency.
func (p *Postings) checkLongest(longest uint32) error {
	if longest <= plainLength {
		return nil
	}
	var tf uint64
	for _, f := range p.TF {
		tf += uint64(f)
	}
	for _, s := range p.segs {
		for _, f := range s.tf {
			tf += uint64(f)
		}
	}
	if uint64(longest) > tf {
		return fmt.Errorf("lexical: bm25: a document of %d words, more than the postings hold (%d): its length is corrupt", longest, tf)
	}
	return nil
}

// norm is document d's length norm.
func (s *BM25) norm(d uint32) float32 { return s.normOf[s.p.DocLen[d]] }

// accums holds score arrays for every BM25 (all zeros while held): a live
// index makes a new BM25 per commit, and a pool per BM25 would give each
// one's first queries fresh memory, which costs page faults (about 1 ms
// for a 300 KB array on the development VM) on the query's path.
var accums sync.Pool

// getAccum is an all-zero accumulator over s's documents. One too small
// for them is dropped, not put back: a live index grows past its
// accumulators' room, and a pool that kept handing them out made a
// query in five allocate a fresh one while ingesting (a larger one
// serves a smaller index as well).
func (s *BM25) getAccum() *accum {
	n := s.n
	for {
		a, ok := accums.Get().(*accum)
		if !ok {
			break
		}
		if cap(a.score) >= n {
			a.score = a.score[:n]
			return a
		}
	}
	return &accum{score: make([]float32, n, n+n/8)} // room for the index to grow
}

// putAccum returns a (all zeros again) to the pool.
func putAccum(a *accum) { accums.Put(a) }

// NewBM25 prepares a scorer over p.
func NewBM25(p *Postings, prm BM25Params) (*BM25, error) {
	if err := prm.Validate(); err != nil {
		return nil, err
	}
	n := p.NumDocs()
	s := &BM25{prm: prm, p: p, n: n, idf: p.idfs(n)}
	var total float64
	var longest uint32
	for _, l := range p.DocLen {
		total += float64(l)
		longest = max(longest, l)
	}
	if err := p.checkLongest(longest); err != nil {
		return nil, err
	}
	avg := max(total/float64(max(n, 1)), 1e-9)
	s.normOf = make([]float32, int(longest)+1)
	for l := range s.normOf {
		s.normOf[l] = float32(prm.K1 * (1 - prm.B + prm.B*float64(l)/avg))
		s.maxNorm = max(s.maxNorm, s.normOf[l])
	}
	if n == 0 {
		s.maxNorm = 0 // as the largest over no document
	}
	return s, nil
}

// accum is a reusable dense score array with the list of touched documents.
type accum struct {
	score   []float32
	touched []int32
}

// Search returns the top k documents for the query text, best first, ties
// by lower document number. An empty or all-stopword query returns no hits.
func (s *BM25) Search(query string, k int) []engine.Hit {
	return s.SearchTerms(Analyze(query), k)
}

// SearchTerms is Search over already analyzed terms. When the query's
// postings promise enough to skip it runs MaxScore (maxscore.go), which
// reads only the postings that can change the top k; otherwise it scores
// every match. Both return exactly the same hits.
func (s *BM25) SearchTerms(terms []string, k int) []engine.Hit {
	ids := s.lookup(terms)
	if k > 0 && len(ids) > 0 && s.prunable(ids, k) {
		return s.maxScore(ids, k)
	}
	return s.exhaustive(ids, k)
}

// TermIDs is the query text's term ids in query order (repeats kept,
// unknown terms dropped), as ScoreDoc takes them.
func (s *BM25) TermIDs(query string) []int { return s.lookup(Analyze(query)) }

// lookup is the terms' ids in query order, unknown terms dropped.
func (s *BM25) lookup(terms []string) []int {
	ids := make([]int, 0, len(terms))
	for _, w := range terms {
		if t := s.p.Terms.Lookup(w); t >= 0 {
			ids = append(ids, t)
		}
	}
	return ids
}

// SearchExhaustive is SearchTerms by scoring every document that matches
// a term: the reference MaxScore must equal, kept for tests and for
// measuring what pruning saves.
func (s *BM25) SearchExhaustive(terms []string, k int) []engine.Hit {
	return s.exhaustive(s.lookup(terms), k)
}

func (s *BM25) exhaustive(ids []int, k int) []engine.Hit {
	a := s.getAccum()
	for _, t := range ids {
		s.addTerm(a, t)
	}
	hits := a.top(k)
	putAccum(a) // not deferred: an array a panic left half-written must not go back
	return hits
}

// top is the k best touched documents; it clears the accumulator.
func (a *accum) top(k int) []engine.Hit {
	top := engine.NewTopK(k)
	for _, d := range a.touched {
		top.Push(d, a.score[d])
		a.score[d] = 0
	}
	a.touched = a.touched[:0]
	return top.Results()
}

// ScoreAll writes every document's BM25 score for the query text into dst
// (len = number of documents; documents matching no term get 0) and
// returns how many documents matched. It accumulates exactly as Search.
func (s *BM25) ScoreAll(query string, dst []float32) (int, error) {
	if len(dst) != s.n {
		return 0, fmt.Errorf("lexical: bm25 scores need %d entries, got %d", s.n, len(dst))
	}
	clear(dst)
	a := &accum{score: dst}
	for _, w := range Analyze(query) {
		if t := s.p.Terms.Lookup(w); t >= 0 {
			s.addTerm(a, t)
		}
	}
	return len(a.touched), nil
}

func (s *BM25) addTerm(a *accum, t int) {
	idf := s.idf[t]
	dl, norm := s.p.DocLen, s.normOf
	s.p.eachList(t, func(docs, tfs []uint32) {
		for i, d := range docs {
			tf := float32(tfs[i])
			if a.score[d] == 0 {
				a.touched = append(a.touched, int32(d))
			}
			a.score[d] += idf * tf / (tf + norm[dl[d]])
		}
	})
}

// IDF returns term t's BM25 idf.
func (s *BM25) IDF(t int) float32 { return s.idf[t] }

// TermFreq returns the frequency of term t in document d (binary search in
// the term's postings, which are sorted by document).
func (p *Postings) TermFreq(t int, d uint32) uint32 {
	docs, tfs := p.base(t)
	if s := p.segmentOf(d); s != nil {
		docs, tfs = s.list(t)
	}
	lo, hi := 0, len(docs)
	for lo < hi {
		m := (lo + hi) / 2
		if docs[m] < d {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(docs) && docs[lo] == d {
		return tfs[lo]
	}
	return 0
}

// ScoreDoc is the BM25 score of one document for already looked-up query
// term ids (−1 entries are skipped), equal to what Search accumulates.
func (s *BM25) ScoreDoc(terms []int, d uint32) float32 {
	var sc float32
	for _, t := range terms {
		if t < 0 {
			continue
		}
		if tf := float32(s.p.TermFreq(t, d)); tf > 0 {
			sc += s.idf[t] * tf / (tf + s.norm(d))
		}
	}
	return sc
}

// Subset is a subset of a BM25 collection scored as a collection of its
// own: its size, its documents' length norms under its average length,
// and (filled as queries need them) its terms' document frequencies. Make
// one per subset with NewSubset and share it across queries; it is safe
// for concurrent use.
type Subset struct {
	words []uint64 // bitset of the documents
	n     int
	norm  []float32
	df    sync.Map // term id → int: the subset's document frequency
}

// NewSubset is the subset of documents whose bits are set in words (bit d
// of words[d/64]); words must cover every document.
func (s *BM25) NewSubset(words []uint64) (*Subset, error) {
	if len(words)*64 < s.n {
		return nil, fmt.Errorf("lexical: a subset of %d bits for %d documents", len(words)*64, s.n)
	}
	sub := &Subset{words: words, norm: make([]float32, s.n)}
	var total float64
	for d, l := range s.p.DocLen {
		if sub.has(uint32(d)) {
			total += float64(l)
			sub.n++
		}
	}
	avg := max(total/float64(max(sub.n, 1)), 1e-9) // as NewBM25 computes it
	for d, l := range s.p.DocLen {
		if sub.has(uint32(d)) {
			sub.norm[d] = float32(s.prm.K1 * (1 - s.prm.B + s.prm.B*float64(l)/avg))
		}
	}
	return sub, nil
}

func (sub *Subset) has(d uint32) bool { return sub.words[d>>6]&(1<<(d&63)) != 0 }

// docFreq is term t's document frequency within the subset.
func (s *BM25) docFreq(sub *Subset, t int) int {
	if v, ok := sub.df.Load(t); ok {
		return v.(int)
	}
	df := 0
	s.p.eachList(t, func(docs, _ []uint32) {
		for _, d := range docs {
			if sub.has(d) {
				df++
			}
		}
	})
	sub.df.Store(t, df)
	return df
}

// SubsetOf is set's Subset of s, made once per set and scorer (a set may
// serve two indexes of one size) and shared by every query over the set.
func SubsetOf(s *BM25, set models.NodeSubset) (*Subset, error) {
	type made struct {
		sub *Subset
		err error
	}
	m := set.Memo(fmt.Sprintf("bm25 %p", s), func() any {
		sub, err := s.NewSubset(set.Words())
		return made{sub, err}
	}).(made)
	return m.sub, m.err
}

// idfWithin is term t's idf over the subset (as NewBM25 computes it over
// the whole collection); ok is false when no document of the subset has t,
// which an index of the subset alone would not know.
func (s *BM25) idfWithin(t int, sub *Subset) (idf float32, ok bool) {
	df := s.docFreq(sub, t)
	if df == 0 {
		return 0, false
	}
	return float32(math.Log(1 + (float64(sub.n)-float64(df)+0.5)/(float64(df)+0.5))), true
}

// ScoreDocWithin is ScoreDoc over the subset: the BM25 an index of the
// subset alone gives document d (which must be in it), for terms
// looked up as TermsWithin does.
func (s *BM25) ScoreDocWithin(terms []int, d uint32, sub *Subset) float32 {
	var sc float32
	for _, t := range terms {
		if t < 0 {
			continue
		}
		idf, ok := s.idfWithin(t, sub)
		if !ok {
			continue
		}
		if tf := float32(s.p.TermFreq(t, d)); tf > 0 {
			sc += idf * tf / (tf + sub.norm[d])
		}
	}
	return sc
}

// Matches is one query's BM25 scores in a pooled array (BM25.Match):
// Score[d] for every document, 0 for one that matched no term, and Docs,
// the documents that matched, in no order. A caller may rewrite the
// matched documents' scores. Release returns the array; neither field may
// be used after it.
type Matches struct {
	Score []float32
	Docs  []int32
	s     *BM25
	a     *accum
}

// Match scores the query text as ScoreAll does (as ScoreAllWithin under a
// non-nil sub) into a pooled array, so that its cost is the query's
// postings rather than the number of documents.
func (s *BM25) Match(query string, sub *Subset) *Matches {
	a := s.getAccum()
	if sub != nil {
		s.addWithin(a, Analyze(query), sub)
	} else {
		for _, w := range Analyze(query) {
			if t := s.p.Terms.Lookup(w); t >= 0 {
				s.addTerm(a, t)
			}
		}
	}
	return &Matches{Score: a.score, Docs: a.touched, s: s, a: a}
}

// Release clears the matched scores and returns the array to the pool; a
// second call does nothing.
func (m *Matches) Release() {
	if m.a == nil {
		return
	}
	for _, d := range m.a.touched {
		m.a.score[d] = 0
	}
	m.a.touched = m.a.touched[:0]
	putAccum(m.a)
	*m = Matches{}
}

// ScoreAllWithin is ScoreAll over a subset, as if it were the whole
// collection: N, the average length and each term's document frequency
// count only its documents, so the scores equal those of an index built
// from them alone (documents outside get 0).
func (s *BM25) ScoreAllWithin(query string, dst []float32, sub *Subset) (int, error) {
	if len(dst) != s.n {
		return 0, fmt.Errorf("lexical: bm25 scores need %d entries, got %d", s.n, len(dst))
	}
	clear(dst)
	a := &accum{score: dst}
	s.addWithin(a, Analyze(query), sub)
	return len(a.touched), nil
}

// SearchWithin is Search over a subset, scored as ScoreAllWithin does; it
// touches only the matching postings.
func (s *BM25) SearchWithin(query string, k int, sub *Subset) []engine.Hit {
	a := s.getAccum()
	s.addWithin(a, Analyze(query), sub)
	hits := a.top(k)
	putAccum(a) // not deferred, as in exhaustive
	return hits
}

// addWithin accumulates the terms' BM25 over the subset with its
// statistics.
func (s *BM25) addWithin(a *accum, terms []string, sub *Subset) {
	for _, w := range terms {
		t := s.p.Terms.Lookup(w)
		if t < 0 {
			continue
		}
		idf, ok := s.idfWithin(t, sub)
		if !ok {
			continue
		}
		s.p.eachList(t, func(docs, tfs []uint32) {
			for i, d := range docs {
				if !sub.has(d) {
					continue
				}
				tf := float32(tfs[i])
				if a.score[d] == 0 {
					a.touched = append(a.touched, int32(d))
				}
				a.score[d] += idf * tf / (tf + sub.norm[d])
			}
		})
	}
}
