package graphops

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/gleaner-rag/gleaner/engine"
	"github.com/gleaner-rag/gleaner/internal/parallel"
)

// lexicalNeighbours adds each document's pairs with its LexicalNeighbours.
func lexicalNeighbours(ctx context.Context, p TermDocs, o KNNOptions, pairs map[[2]int32]bool) error {
	best, err := LexicalNeighbours(ctx, p, o)
	if err != nil {
		return err
	}
	for d, es := range best {
		for _, e := range es {
			addPair(pairs, int32(d), e)
		}
	}
	return nil
}

// LexicalNeighbours is each document's top o.Lexical lexical neighbours
// (o.MaxDFRatio and o.LexicalBudget apply; o.Semantic does not): the
// documents that share the most of its terms, ties to the lower id, as a
// set in no stated order. A document gets fewer where fewer documents
// share a term with it.
//
// It does not count every pair. A document's terms are taken rarest
// first; once fewer terms are left than the k-th best count so far, no
// document not met yet can enter the top k, and the rest of the terms
// only update the candidates that still can (a galloping merge with the
// term's postings). The terms skipped are the frequent ones, whose
// postings make the all-pairs count quadratic (Σ df²). Documents are
// shared among the context's workers.
func LexicalNeighbours(ctx context.Context, p TermDocs, o KNNOptions) ([][]int32, error) {
	if o.Lexical < 1 || !(o.MaxDFRatio > 0 && o.MaxDFRatio <= 1) || o.LexicalBudget < 0 {
		return nil, fmt.Errorf("graphops: lexical neighbours: want k ≥ 1, max df ratio in (0, 1] and budget ≥ 0, got %d, %v and %d", o.Lexical, o.MaxDFRatio, o.LexicalBudget)
	}
	o.Lexical = min(o.Lexical, max(p.N-1, 1))
	n, k := p.N, o.Lexical
	fwd, err := forwardByRarity(p, int64(o.MaxDFRatio*float64(n)))
	if err != nil {
		return nil, err
	}
	best := make([][]int32, n)
	workers := parallel.Workers(ctx)
	scratch := make(chan *lexScratch, workers)
	for range workers {
		scratch <- &lexScratch{count: make([]int32, n), top: engine.NewTopK(k)}
	}
	const chunk = 1024
	err = parallel.ForEach(ctx, (n+chunk-1)/chunk, workers, reporter(o.Progress), "knn: lexical neighbours (blocks of 1024 nodes)", func(ctx context.Context, c int) error {
		s := <-scratch
		defer func() { scratch <- s }()
		for d := c * chunk; d < min(n, (c+1)*chunk); d++ {
			best[d] = s.neighbours(p, fwd.terms(d), int32(d), int32(k), o.LexicalBudget)
			parallel.Yield(ctx)
		}
		return nil
	})
	return best, err
}

// termLists holds each document's terms in CSR form: document d's are
// Term[Ptr[d]:Ptr[d+1]].
type termLists struct {
	Ptr  []int64
	Term []int32
}

func (l termLists) terms(d int) []int32 { return l.Term[l.Ptr[d]:l.Ptr[d+1]] }

// forwardByRarity lists each document's terms with df ≤ maxDF (at least
// 1), rarest first (ties by term id). A list whose documents are not
// strictly ascending and below N is refused: the counts and the merges
// rely on it.
func forwardByRarity(p TermDocs, maxDF int64) (termLists, error) {
	df := func(t int32) int64 { return p.Ptr[t+1] - p.Ptr[t] }
	var order []int32
	for t := 0; t+1 < len(p.Ptr); t++ {
		if df(int32(t)) <= max(maxDF, 1) {
			order = append(order, int32(t))
		}
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(df(a), df(b)) })
	l := termLists{Ptr: make([]int64, p.N+1)}
	for _, t := range order {
		for i, d := range p.Doc[p.Ptr[t]:p.Ptr[t+1]] {
			if int64(d) >= int64(p.N) || i > 0 && d <= p.Doc[p.Ptr[t]+int64(i)-1] {
				return termLists{}, fmt.Errorf("graphops: lexical neighbours: term %d's postings are not strictly ascending node numbers below %d (entry %d: %d)", t, p.N, i, d)
			}
			l.Ptr[d+1]++
		}
	}
	for d := range p.N {
		l.Ptr[d+1] += l.Ptr[d]
	}
	l.Term = make([]int32, l.Ptr[p.N])
	fill := slices.Clone(l.Ptr[:p.N])
	for _, t := range order {
		for _, d := range p.Doc[p.Ptr[t]:p.Ptr[t+1]] {
			l.Term[fill[d]] = t
			fill[d]++
		}
	}
	return l, nil
}

// lexScratch is one worker's state; count is all zero between documents.
type lexScratch struct {
	count   []int32 // shared terms with the current document, per candidate
	touched []int32 // candidates met
	atLeast []int32 // atLeast[v]: candidates with count ≥ v
	kth     int32   // the k-th best count so far (0 while fewer than k candidates)
	live    []int32 // candidates that can still reach the top k, ascending
	read    int64   // postings read in full, over every document (tests)
	top     *engine.TopK
}

// neighbours is document d's top-k neighbours; terms are d's, rarest
// first, and budget bounds the postings read in full (0: none).
func (s *lexScratch) neighbours(p TermDocs, terms []int32, d, k int32, budget int64) []int32 {
	s.atLeast = slices.Grow(s.atLeast[:0], len(terms)+2)[:len(terms)+2]
	clear(s.atLeast)
	s.kth, s.touched = 0, s.touched[:0]
	read, cut := s.meet(p, terms, d, k, budget)
	s.shortlist(len(terms)-read, k, cut)
	s.follow(p, terms[read:], k)
	s.top.Reset(int(k))
	for _, e := range s.live {
		s.top.Push(e, float32(s.count[e]))
	}
	out := make([]int32, 0, s.top.Len())
	for _, h := range s.top.Results() {
		out = append(out, h.Index)
	}
	for _, e := range s.touched {
		s.count[e] = 0
	}
	return out
}

// meet counts the shared terms of every document in the postings of d's
// terms, rarest first, until a document not met yet can no longer enter
// the top k and few of those met still can, or the postings read pass
// budget with k candidates met. It returns how many terms it read and
// whether the budget cut it.
func (s *lexScratch) meet(p TermDocs, terms []int32, d, k int32, budget int64) (int, bool) {
	var read int64
	for i, t := range terms {
		if left := int32(len(terms) - i); left < s.kth && int(s.atLeast[s.kth-left]) <= followLen(k) {
			return i, false // the few candidates that can still make it are followed
		}
		post := p.Doc[p.Ptr[t]:p.Ptr[t+1]]
		if read += int64(len(post)); budget > 0 && read > budget && len(s.touched) >= int(k) {
			return i, true
		}
		s.read += int64(len(post))
		for _, e := range post {
			if int32(e) == d {
				continue
			}
			if s.count[e] == 0 {
				s.touched = append(s.touched, int32(e))
			}
			s.bump(int32(e), k)
		}
	}
	return len(terms), false
}

// shortlist makes live, ascending, the candidates the left terms are
// counted for: those that can still reach the k-th best count and, after a
// budget cut, only the best shortlistLen(k) of them.
func (s *lexScratch) shortlist(left int, k int32, cut bool) {
	s.live = append(s.live[:0], s.touched...)
	if left == 0 {
		return
	}
	if c := shortlistLen(k); cut && len(s.live) > c {
		s.top.Reset(c)
		for _, e := range s.live {
			s.top.Push(e, float32(s.count[e]))
		}
		s.live = s.live[:0]
		for _, h := range s.top.Results() {
			s.live = append(s.live, h.Index)
		}
	} else {
		s.narrow(left)
	}
	slices.Sort(s.live)
}

// followLen is how many candidates that can still enter the top k are
// worth following through the remaining terms instead of reading their
// postings in full: sorting and merging many costs more than the reads.
func followLen(k int32) int { return max(256, 4*int(k)) }

// shortlistLen is how many candidates a budget cut keeps counting: enough
// that the frequent terms it did not read can still reorder the top k.
func shortlistLen(k int32) int { return max(64, 4*int(k)) }

// follow counts terms (the ones meet left) for the live candidates only,
// each by a galloping merge with the term's postings, until the top k is
// decided.
func (s *lexScratch) follow(p TermDocs, terms []int32, k int32) {
	for i := 0; i < len(terms) && int32(len(s.live)) > k; i++ {
		t := terms[i]
		post, j := p.Doc[p.Ptr[t]:p.Ptr[t+1]], 0
		for _, e := range s.live {
			if j = gallop(post, j, uint32(e)); j == len(post) {
				break
			}
			if post[j] == uint32(e) {
				s.bump(e, k)
			}
		}
		s.narrow(len(terms) - i - 1)
	}
}

// bump counts one more shared term for candidate e and moves the k-th
// best count up when k candidates now reach the next value.
func (s *lexScratch) bump(e, k int32) {
	s.count[e]++
	s.atLeast[s.count[e]]++
	for int(s.kth)+1 < len(s.atLeast) && s.atLeast[s.kth+1] >= k {
		s.kth++
	}
}

// narrow keeps the live candidates that can still reach the k-th best
// count with left terms to come (a tie may still win on its lower id).
func (s *lexScratch) narrow(left int) {
	s.live = slices.DeleteFunc(s.live, func(e int32) bool { return s.count[e]+int32(left) < s.kth })
}

// gallop is the first index ≥ lo of ascending a whose value is ≥ x.
func gallop(a []uint32, lo int, x uint32) int {
	hi, step := lo, 1
	for hi < len(a) && a[hi] < x {
		lo, hi, step = hi+1, hi+step, step*2
	}
	hi = min(hi, len(a))
	return lo + sort.Search(hi-lo, func(i int) bool { return a[lo+i] >= x })
}
