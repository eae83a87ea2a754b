package lexical

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// Postings is an inverted index in CSR form: the documents containing term t
// are Doc[Ptr[t]:Ptr[t+1]] (ascending) with term frequencies TF at the same
// positions. DocLen holds each document's analyzed length.
type Postings struct {
	Terms  TermTable
	Ptr    []int64
	Doc    []uint32
	TF     []uint32
	DocLen []uint32
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
	n := uint32(len(p.DocLen))
	for t := 0; t < v; t++ {
		if p.Ptr[t] > p.Ptr[t+1] {
			return fmt.Errorf("postings: term %d pointers decrease", t)
		}
	}
	for i, d := range p.Doc {
		if d >= n {
			return fmt.Errorf("postings: entry %d names document %d of %d", i, d, n)
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

// BuildPostings analyzes n documents (text(i) gives document i) on all cores
// and inverts them. done, if not nil, is called with the number of documents
// analyzed so far.
func BuildPostings(ctx context.Context, n int, text func(int) string, done func(int)) (*Postings, error) {
	docs := make([]docTerms, n)
	if err := analyzeAll(ctx, n, text, docs, done); err != nil {
		return nil, err
	}
	return invert(docs), nil
}

func analyzeAll(ctx context.Context, n int, text func(int) string, docs []docTerms, done func(int)) error {
	var next, finished atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if i%1024 == 0 && ctx.Err() != nil {
					firstErr.CompareAndSwap(nil, ctx.Err())
					return
				}
				docs[i] = countTerms(Analyze(text(i)))
				if f := finished.Add(1); done != nil && f%4096 == 0 {
					done(int(f))
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return err
	}
	if done != nil {
		done(n)
	}
	return nil
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

// invert turns per-document term counts into CSR postings.
func invert(docs []docTerms) *Postings {
	vocab := map[string]int{}
	for _, d := range docs {
		for _, t := range d.terms {
			vocab[t]++
		}
	}
	words := make([]string, 0, len(vocab))
	for w := range vocab {
		words = append(words, w)
	}
	p := &Postings{Terms: NewTermTable(words), DocLen: make([]uint32, len(docs))}
	id := make(map[string]int, len(words))
	p.Ptr = make([]int64, p.Terms.Len()+1)
	for i := 0; i < p.Terms.Len(); i++ {
		w := p.Terms.Term(i)
		id[w] = i
		p.Ptr[i+1] = p.Ptr[i] + int64(vocab[w])
	}
	p.Doc = make([]uint32, p.Ptr[len(p.Ptr)-1])
	p.TF = make([]uint32, len(p.Doc))
	fill := append([]int64(nil), p.Ptr[:len(p.Ptr)-1]...)
	for di, d := range docs {
		p.DocLen[di] = d.n
		for j, t := range d.terms {
			k := id[t]
			p.Doc[fill[k]] = uint32(di)
			p.TF[fill[k]] = d.tf[j]
			fill[k]++
		}
	}
	return p
}
