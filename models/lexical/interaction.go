package lexical

import (
	"math"
	"sync"
	"sync/atomic"
)

// Interaction feature names, in the order of the latent vector the lexical
// cross-encoder produces for a (query, node) pair.
var FeatureNames = []string{
	"bm25",            // BM25 of the query in the node (title + text)
	"idf_coverage",    // idf-weighted share of query terms present in the node
	"term_coverage",   // share of distinct query terms present
	"bigram_overlap",  // share of query bigrams present as consecutive node terms
	"title_in_query",  // share of the node's title terms that the query contains
	"title_contained", // 1 when every title term is in the query
	"lsa_cosine",      // cosine of the LSA vectors
	"max_idf_match",   // largest idf among matched terms ÷ largest idf in the query
	"log_node_len",    // ln(1 + analyzed node length)
	"log_query_len",   // ln(1 + analyzed query length)
}

// NumFeatures is the length of an interaction latent.
var NumFeatures = len(FeatureNames)

// Source is what the lexical encoder reads of an index.
type Source interface {
	Title(i int) string
	Text(i int) string
	Vector(i int) []float32
}

// InteractionModel computes interaction features over an index's postings,
// BM25 statistics and vectors. It is safe for concurrent use.
type InteractionModel struct {
	P   *Postings
	BM  *BM25
	Src Source
	// EmbedQuery embeds the query in the index's vector space (nil or
	// failing: the lsa_cosine feature is 0).
	EmbedQuery func(text string) []float32

	once  sync.Once
	nodes []atomic.Pointer[nodeEntry] // analysed nodes, direct-mapped by node (nodeTerms)
	slots int                         // the cache's size; 0: min(nodes, nodeSlots) (tests set it)
}

// nodeSlots bounds the cache of analysed nodes. Unbounded, it held every
// node a process ever reranked: re2 at bmax 400 over 300 questions on the
// 10⁶-passage scale index left 144 MiB of heap, and a server's would grow
// towards the whole corpus. At most this many nodes are kept (107 MiB in
// that run); an index of no more nodes keeps them all.
const nodeSlots = 1 << 16

// nodeEntry is one node's analysed title, titleEnd and text.
type nodeEntry struct {
	node  int
	terms []string
}

// nodeTerms returns node i's analyzed title followed by its text, analysing
// a node once however many queries rerank it while it keeps its slot.
func (m *InteractionModel) nodeTerms(i int) (title, all []string) {
	slot := m.slot(i)
	if e := slot.Load(); e != nil && e.node == i {
		t := e.terms
		return t[:titleLen(t)], t[titleLen(t)+1:]
	}
	title = Analyze(m.Src.Title(i))
	t := append(append(title, titleEnd), Analyze(m.Src.Text(i))...)
	slot.Store(&nodeEntry{node: i, terms: t})
	return t[:len(title)], t[len(title)+1:]
}

// slot is node i's place in the cache, made on first use.
func (m *InteractionModel) slot(i int) *atomic.Pointer[nodeEntry] {
	m.once.Do(func() {
		if m.slots == 0 {
			m.slots = min(m.P.NumDocs(), nodeSlots)
		}
		m.nodes = make([]atomic.Pointer[nodeEntry], max(m.slots, 1))
	})
	return &m.nodes[i%len(m.nodes)]
}

// cachedTerms returns node i's analysed title and text when the cache
// holds them (whole true), without analysing.
func (m *InteractionModel) cachedTerms(i int) (title, text []string, whole bool) {
	if e := m.slot(i).Load(); e != nil && e.node == i {
		t := e.terms
		return t[:titleLen(t)], t[titleLen(t)+1:], true
	}
	return nil, nil, false
}

// titleEnd separates title terms from text terms in the cached slice (the
// analyzer never produces it: it contains no letters or digits).
const titleEnd = "\x00"

func titleLen(t []string) int {
	for i, w := range t {
		if w == titleEnd {
			return i
		}
	}
	return len(t)
}

// QueryState is the per-query part of the features, computed once.
type QueryState struct {
	terms   []string
	ids     []int // term ids, −1 when not in the vocabulary
	idf     []float64
	sumIDF  float64
	maxIDF  float64
	bigrams map[[2]string]bool
	inQuery map[string]bool
	vec     []float32
	sub     *Subset // nil: the whole index
	// term is each distinct term's id in the whole index (−1: in no
	// document), whatever the subset, and pairs the bigrams as positions
	// in it: a node holds a query bigram only if it holds both terms,
	// which the postings tell without analysing its text.
	term  []int
	pairs [][2]int
}

// Prepare analyzes a query once for any number of nodes.
func (m *InteractionModel) Prepare(text string) *QueryState { return m.PrepareWithin(text, nil) }

// PrepareWithin is Prepare over a subset of the index (nil: all of it):
// idfs and BM25 count only the subset, and a term none of its documents
// has counts as unknown, so the features equal those of an index built
// from the subset alone (for nodes in it).
func (m *InteractionModel) PrepareWithin(text string, sub *Subset) *QueryState {
	q := &QueryState{terms: Analyze(text), bigrams: map[[2]string]bool{}, inQuery: map[string]bool{}, sub: sub}
	at := map[string]int{} // distinct term → its position in ids
	for i, w := range q.terms {
		q.inQuery[w] = true
		if i > 0 {
			q.bigrams[[2]string{q.terms[i-1], w}] = true
		}
		if _, ok := at[w]; ok {
			continue
		}
		at[w] = len(q.ids)
		t := m.P.Terms.Lookup(w)
		q.term = append(q.term, t)
		idf := 0.0
		switch {
		case t >= 0 && sub != nil:
			x, ok := m.BM.idfWithin(t, sub)
			if !ok {
				t = -1 // no document of the subset has it
			}
			idf = float64(x)
		case t >= 0:
			idf = float64(m.BM.IDF(t))
		}
		q.ids, q.idf = append(q.ids, t), append(q.idf, idf)
		q.sumIDF += idf
		q.maxIDF = max(q.maxIDF, idf)
	}
	for b := range q.bigrams {
		q.pairs = append(q.pairs, [2]int{at[b[0]], at[b[1]]})
	}
	if m.EmbedQuery != nil {
		q.vec = m.EmbedQuery(text)
	}
	return q
}

// Features writes node i's interaction features for q into out
// (NumFeatures values).
func (m *InteractionModel) Features(q *QueryState, i int, out []float32) {
	d := uint32(i)
	var covIDF, cov, maxMatch float64
	var held [64]bool // distinct query terms node i holds; past 64 its text is analysed
	for k, t := range q.ids {
		has := t >= 0 && m.P.TermFreq(t, d) > 0
		if has {
			cov++
			covIDF += q.idf[k]
			maxMatch = max(maxMatch, q.idf[k])
		}
		switch {
		case k >= len(held):
		case t == q.term[k]:
			held[k] = has
		case q.term[k] >= 0: // outside the subset's terms, but the node may hold it
			held[k] = m.P.TermFreq(q.term[k], d) > 0
		}
	}
	if q.sub != nil {
		out[0] = m.BM.ScoreDocWithin(q.ids, d, q.sub)
	} else {
		out[0] = m.BM.ScoreDoc(q.ids, d)
	}
	out[1] = ratio(covIDF, q.sumIDF)
	out[2] = ratio(cov, float64(len(q.ids)))
	title, text, whole := m.cachedTerms(i)
	switch {
	case whole:
		out[3] = bigramOverlap(q, title, text)
	case len(q.ids) > len(held) || mayHoldBigram(q, held[:]):
		title, text = m.nodeTerms(i)
		out[3] = bigramOverlap(q, title, text)
	default: // no query bigram can be in the node: only its title is read
		// (the postings are Analyze of the node's index text, title then
		// text, so they tell presence exactly; an index analysed otherwise
		// would need its text read)
		title, out[3] = Analyze(m.Src.Title(i)), 0
	}
	out[4], out[5] = titleMatch(q, title)
	out[6] = cosine(q.vec, m.Src.Vector(i))
	out[7] = ratio(maxMatch, q.maxIDF)
	out[8] = float32(math.Log1p(float64(m.P.DocLen[i])))
	out[9] = float32(math.Log1p(float64(len(q.terms))))
}

// mayHoldBigram reports whether a node holding the distinct query terms
// marked in held can hold one of q's bigrams: one whose both terms it
// holds.
func mayHoldBigram(q *QueryState, held []bool) bool {
	for _, p := range q.pairs {
		if held[p[0]] && held[p[1]] {
			return true
		}
	}
	return false
}

func ratio(a, b float64) float32 {
	if b == 0 {
		return 0
	}
	return float32(a / b)
}

// bigramOverlap counts query bigrams found in the title or the text (a
// bigram spanning title and text counts too, as the BM25 text joins them).
func bigramOverlap(q *QueryState, title, text []string) float32 {
	if len(q.bigrams) == 0 {
		return 0
	}
	found := map[[2]string]bool{}
	prev := ""
	for _, part := range [][]string{title, text} {
		for _, w := range part {
			if b := [2]string{prev, w}; prev != "" && q.bigrams[b] {
				found[b] = true
			}
			prev = w
		}
	}
	return float32(len(found)) / float32(len(q.bigrams))
}

func titleMatch(q *QueryState, title []string) (float32, float32) {
	if len(title) == 0 {
		return 0, 0
	}
	in := 0
	for _, w := range title {
		if q.inQuery[w] {
			in++
		}
	}
	share := float32(in) / float32(len(title))
	if in == len(title) {
		return share, 1
	}
	return share, 0
}

func cosine(a, b []float32) float32 {
	if len(a) == 0 || len(a) != len(b) {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return float32(dot / math.Sqrt(na*nb))
}
