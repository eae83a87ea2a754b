package lexical

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/gleaner-rag/gleaner/internal/parallel"
)

// Update returns the postings of p's documents that remap keeps, followed
// by the added texts, analysed as BuildPostings analyses them: remap[d] is
// document d's new number, or -1 when it goes, and kept documents keep
// their order (numbered 0, 1, … without gaps). Added text i becomes
// document kept+i. The result equals BuildPostings over the kept documents'
// texts then the added ones (the same terms, postings and lengths), at the
// cost of one pass over p's postings rather than a re-analysis; p is not
// changed, so readers of it are undisturbed.
func (p *Postings) Update(ctx context.Context, remap []int32, added []string) (*Postings, error) {
	kept, err := checkRemap(remap, p.NumDocs())
	if err != nil {
		return nil, err
	}
	docs := make([]docTerms, len(added))
	if err := analyzeRange(ctx, 0, len(added), func(i int) string { return added[i] }, docs); err != nil {
		return nil, err
	}
	fresh := invertAdded(ctx, docs, uint32(kept))
	if kept == p.NumDocs() {
		return p.appended(ctx, fresh, docs), nil
	}
	p = p.flatFor(ctx) // the same documents' postings; removing renumbers them all anyway
	oldDF := p.keptDF(ctx, remap)
	q := &Postings{Terms: mergeTerms(ctx, p.Terms, oldDF, fresh.words)}
	q.Ptr = make([]int64, q.Terms.Len()+1)
	from := make([]int, q.Terms.Len()) // new term → old term id, or -1
	for t, o := 0, 0; t < q.Terms.Len(); t++ {
		if t%4096 == 0 {
			parallel.Yield(ctx)
		}
		w := q.Terms.Term(t)
		for o < p.Terms.Len() && p.Terms.Term(o) < w {
			o++
		}
		from[t] = -1
		n := int64(len(fresh.docs[w]))
		if o < p.Terms.Len() && p.Terms.Term(o) == w {
			from[t] = o
			n += oldDF[o]
		}
		q.Ptr[t+1] = q.Ptr[t] + n
	}
	q.Doc = make([]uint32, q.Ptr[len(q.Ptr)-1])
	q.TF = make([]uint32, len(q.Doc))
	for t := range from {
		if t%1024 == 0 {
			parallel.Yield(ctx)
		}
		at := q.Ptr[t]
		if o := from[t]; o >= 0 {
			for j := p.Ptr[o]; j < p.Ptr[o+1]; j++ {
				if d := remap[p.Doc[j]]; d >= 0 {
					q.Doc[at], q.TF[at] = uint32(d), p.TF[j]
					at++
				}
			}
		}
		for _, e := range fresh.docs[q.Terms.Term(t)] {
			q.Doc[at], q.TF[at] = e.doc, e.tf
			at++
		}
	}
	q.DocLen = make([]uint32, 0, kept+len(added))
	for d, r := range remap {
		if r >= 0 {
			q.DocLen = append(q.DocLen, p.DocLen[d])
		}
	}
	for i := range docs {
		q.DocLen = append(q.DocLen, docs[i].n)
	}
	return q, nil
}

// appended is Update when every document is kept: the added documents go
// into a new segment after p's (segments.go), whose new words are added to
// the term table after p's; p's arrays are shared. The newest segments
// merge (mergeTail), and past an eighth of the documents the segments are
// flattened into the base.
func (p *Postings) appended(ctx context.Context, fresh addedPostings, docs []docTerms) *Postings {
	if len(docs) == 0 {
		return p
	}
	var words []string
	for i, w := range fresh.words {
		if p.Terms.Lookup(w) < 0 {
			words = append(words, w)
		}
		if i%256 == 0 {
			parallel.Yield(ctx)
		}
	}
	q := &Postings{Terms: p.Terms.with(words), Ptr: p.Ptr, Doc: p.Doc, TF: p.TF, flat: &flatCache{}, impacts: p.impacts}
	if q.impacts == nil {
		q.impacts = &impactCache{}
	}
	q.DocLen = make([]uint32, len(p.DocLen), len(p.DocLen)+len(docs))
	copy(q.DocLen, p.DocLen)
	for i := range docs {
		q.DocLen = append(q.DocLen, docs[i].n)
	}
	q.segs = mergeTail(ctx, append(slices.Clone(p.segs), newSegment(fresh, q.Terms, uint32(len(p.DocLen)))))
	if tail := len(q.DocLen) - int(q.segs[0].first); tail > len(q.DocLen)/8 {
		return q.flatten(ctx) // new base arrays: the next append holds their impacts
	}
	return q
}

// checkRemap verifies that remap numbers the kept documents 0, 1, … in
// order, and returns how many it keeps.
func checkRemap(remap []int32, n int) (int, error) {
	if len(remap) != n {
		return 0, fmt.Errorf("lexical: update: %d renumberings for %d documents", len(remap), n)
	}
	kept := 0
	for d, r := range remap {
		switch {
		case r < 0:
		case int(r) != kept:
			return 0, fmt.Errorf("lexical: update: document %d becomes %d, want %d (kept documents keep their order)", d, r, kept)
		default:
			kept++
		}
	}
	return kept, nil
}

// keptDF counts, per term of p, the postings of kept documents.
func (p *Postings) keptDF(ctx context.Context, remap []int32) []int64 {
	df := make([]int64, p.Terms.Len())
	for t := range df {
		if t%1024 == 0 {
			parallel.Yield(ctx)
		}
		for j := p.Ptr[t]; j < p.Ptr[t+1]; j++ {
			if remap[p.Doc[j]] >= 0 {
				df[t]++
			}
		}
	}
	return df
}

// posting is one added document's entry for a term.
type posting struct{ doc, tf uint32 }

// addedPostings are the added documents' postings by term.
type addedPostings struct {
	docs  map[string][]posting
	words []string // sorted
}

// invertAdded inverts analysed documents numbered from first. ctx only
// paces the work (parallel.Yield).
func invertAdded(ctx context.Context, docs []docTerms, first uint32) addedPostings {
	a := addedPostings{docs: map[string][]posting{}}
	for i := range docs {
		if i%16 == 0 {
			parallel.Yield(ctx)
		}
		for j, w := range docs[i].terms {
			if _, ok := a.docs[w]; !ok {
				a.words = append(a.words, w)
			}
			a.docs[w] = append(a.docs[w], posting{first + uint32(i), docs[i].tf[j]})
		}
		docs[i].terms, docs[i].tf = nil, nil
	}
	sort.Strings(a.words)
	return a
}

// mergeTerms is the sorted union of old's terms that kept documents still
// use (df > 0) and the added words (sorted).
func mergeTerms(ctx context.Context, old TermTable, df []int64, added []string) TermTable {
	t := TermTable{Off: make([]int64, 1, old.Len()+len(added)+1)}
	push := func(w string) {
		t.Blob = append(t.Blob, w...)
		t.Off = append(t.Off, int64(len(t.Blob)))
	}
	i, j := 0, 0
	for n := 0; i < old.Len() || j < len(added); n++ {
		if n%4096 == 0 {
			parallel.Yield(ctx)
		}
		switch {
		case j == len(added) || (i < old.Len() && old.Term(i) < added[j]):
			if df[i] > 0 {
				push(old.Term(i))
			}
			i++
		case i == old.Len() || added[j] < old.Term(i):
			push(added[j])
			j++
		default: // the same word
			push(added[j])
			i, j = i+1, j+1
		}
	}
	return t
}

// Remap returns the model over a new term table (an updated index's):
// terms keep their LSA rows, new terms have none. The basis, idf and
// dimensions are shared with m, which is not changed.
func (m *LSA) Remap(old, terms TermTable) *LSA {
	row := make([]int32, terms.Len())
	switch {
	case terms.extends(old): // words added after old's
		copy(row, m.Row)
		for t := old.Len(); t < terms.Len(); t++ {
			row[t] = -1
		}
		return &LSA{Row: row, IDF: m.IDF, V: m.V, Dims: m.Dims}
	case old.Added() > 0 || terms.Added() > 0: // a table flattened: look each word up
		for t := range row {
			row[t] = -1
			if o := old.Lookup(terms.Term(t)); o >= 0 {
				row[t] = m.Row[o]
			}
		}
		return &LSA{Row: row, IDF: m.IDF, V: m.V, Dims: m.Dims}
	}
	for t, o := 0, 0; t < terms.Len(); t++ {
		w := terms.Term(t)
		for o < old.Len() && old.Term(o) < w {
			o++
		}
		row[t] = -1
		if o < old.Len() && old.Term(o) == w {
			row[t] = m.Row[o]
		}
	}
	return &LSA{Row: row, IDF: m.IDF, V: m.V, Dims: m.Dims}
}
