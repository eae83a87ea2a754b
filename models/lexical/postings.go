package lexical

import (
	"context"
	"fmt"

	"github.com/gleaner-rag/gleaner/internal/parallel"
)

// Postings is an inverted index in CSR form: the documents containing term t
// are Doc[Ptr[t]:Ptr[t+1]] (ascending) with term frequencies TF at the same
// positions. DocLen holds each document's analyzed length. Postings that
// Update appended documents to also have segments after these arrays
// (segments.go): the arrays then hold only the base, and readers outside
// this package take Flat.
type Postings struct {
	Terms  TermTable
	Ptr    []int64
	Doc    []uint32
	TF     []uint32
	DocLen []uint32
	segs   []*segment
	flat   *flatCache
	// impacts of the base arrays' lists (impacts.go), shared with every
	// Postings that Update appends to these arrays; nil holds none (only
	// Postings with segments hold them, so a flat one equals a build's).
	impacts *impactCache
}

// NumDocs is the number of documents indexed.
func (p *Postings) NumDocs() int { return len(p.DocLen) }

// Validate checks the internal consistency of postings read from disk.
func (p *Postings) Validate() error {
	v := p.Terms.Len()
	switch {
	case len(p.Ptr) != v+1:
		return fmt.Errorf("postings: %d pointers for %d terms", len(p.Ptr), v)
	case p.Ptr[0] != 0 || p.Ptr[v] != int64(len(p.Doc)) || len(p.Doc) != len(p.TF):
		return fmt.Errorf("postings: pointer range [%d,%d] does not match %d entries", p.Ptr[0], p.Ptr[v], len(p.Doc))
	}
	for t := 0; t < v; t++ {
		if p.Ptr[t] > p.Ptr[t+1] {
			return fmt.Errorf("postings: term %d pointers decrease", t)
		}
	}
	// The document lists are the largest array open checks (0.28 GB at 10⁶
	// passages): checked on all cores, the first bad term's error reported.
	errs := make([]error, (v+validateTerms-1)/validateTerms)
	forChunks(v, validateTerms, func(lo, hi int) { errs[lo/validateTerms] = p.validateLists(lo, hi) })
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// validateTerms is how many terms' lists one task of Validate checks.
const validateTerms = 1024

// validateLists checks that the lists of terms [lo, hi) name documents of
// the index in strictly ascending order (searches gallop and merge).
func (p *Postings) validateLists(lo, hi int) error {
	n := uint32(len(p.DocLen))
	for t := lo; t < hi; t++ {
		for i := p.Ptr[t]; i < p.Ptr[t+1]; i++ {
			if d := p.Doc[i]; d >= n {
				return fmt.Errorf("postings: entry %d names document %d of %d", i, d, n)
			} else if i > p.Ptr[t] && d <= p.Doc[i-1] {
				return fmt.Errorf("postings: term %d's documents do not ascend at entry %d (%d after %d)", t, i, d, p.Doc[i-1])
			}
		}
	}
	return nil
}

// docTerms is one analyzed document: distinct terms with frequencies.
type docTerms struct {
	terms []string
	tf    []uint32
	n     uint32
}

// analyzeBlock is how many documents are analyzed before their terms are
// folded into compact ids: the analyzed strings of one block are all that
// is held at a time (at 10⁶ passages, holding every document's strings
// took several GiB).
const analyzeBlock = 16384

// BuildPostings analyzes n documents (text(i) gives document i) on all cores
// and inverts them. done, if not nil, is called with the number of documents
// analyzed so far.
func BuildPostings(ctx context.Context, n int, text func(int) string, done func(int)) (*Postings, error) {
	inv := newInverter(n)
	if done != nil && n == 0 {
		done(0)
	}
	docs := make([]docTerms, min(n, analyzeBlock))
	for lo := 0; lo < n; lo += analyzeBlock {
		hi := min(lo+analyzeBlock, n)
		if err := analyzeRange(ctx, lo, hi, text, docs[:hi-lo]); err != nil {
			return nil, err
		}
		inv.add(docs[:hi-lo])
		if done != nil {
			done(hi)
		}
	}
	return inv.postings(), nil
}

// analyzeRange analyzes documents [lo, hi) into docs on the cores ctx
// allows (parallel.Workers).
func analyzeRange(ctx context.Context, lo, hi int, text func(int) string, docs []docTerms) error {
	workers := min(chunkWorkers(hi-lo, 64), parallel.Workers(ctx))
	forWorkerChunks(hi-lo, 64, workers, func(_, from, to int) {
		if ctx.Err() != nil {
			return
		}
		for i := from; i < to; i++ {
			docs[i] = countTerms(Analyze(text(lo + i)))
			parallel.Yield(ctx)
		}
	})
	return ctx.Err()
}

func countTerms(toks []string) docTerms {
	idx := make(map[string]int, len(toks))
	d := docTerms{n: uint32(len(toks))}
	for _, t := range toks {
		if i, ok := idx[t]; ok {
			d.tf[i]++
			continue
		}
		idx[t] = len(d.terms)
		d.terms = append(d.terms, t)
		d.tf = append(d.tf, 1)
	}
	return d
}

// inverter collects analyzed documents as term ids in order of first
// appearance (8 bytes per document term) and inverts them at the end.
type inverter struct {
	id     map[string]int32
	words  []string // by id
	df     []int64  // by id
	docPtr []int64  // document d's terms are term[docPtr[d]:docPtr[d+1]]
	term   []int32
	tf     []uint32
	docLen []uint32
}

func newInverter(n int) *inverter {
	return &inverter{id: map[string]int32{}, docPtr: make([]int64, 1, n+1), docLen: make([]uint32, 0, n)}
}

// add appends the next documents.
func (v *inverter) add(docs []docTerms) {
	for i := range docs {
		d := &docs[i]
		for j, w := range d.terms {
			k, ok := v.id[w]
			if !ok {
				k = int32(len(v.words))
				v.id[w] = k
				v.words = append(v.words, w)
				v.df = append(v.df, 0)
			}
			v.df[k]++
			v.term = append(v.term, k)
			v.tf = append(v.tf, d.tf[j])
		}
		v.docPtr = append(v.docPtr, int64(len(v.term)))
		v.docLen = append(v.docLen, d.n)
		*d = docTerms{} // the block's strings can go
	}
}

// postings inverts the documents into CSR postings over the sorted term
// table; each term's documents ascend.
func (v *inverter) postings() *Postings {
	p := &Postings{Terms: NewTermTable(v.words), DocLen: v.docLen}
	sorted := make([]int32, len(v.words)) // first-appearance id → sorted id
	p.Ptr = make([]int64, p.Terms.Len()+1)
	for i := 0; i < p.Terms.Len(); i++ {
		k := v.id[p.Terms.Term(i)]
		sorted[k] = int32(i)
		p.Ptr[i+1] = p.Ptr[i] + v.df[k]
	}
	p.Doc = make([]uint32, p.Ptr[len(p.Ptr)-1])
	p.TF = make([]uint32, len(p.Doc))
	fill := append([]int64(nil), p.Ptr[:len(p.Ptr)-1]...)
	for d := 0; d+1 < len(v.docPtr); d++ {
		for j := v.docPtr[d]; j < v.docPtr[d+1]; j++ {
			k := sorted[v.term[j]]
			p.Doc[fill[k]] = uint32(d)
			p.TF[fill[k]] = v.tf[j]
			fill[k]++
		}
	}
	return p
}
