package lexical

import (
	"context"
	"fmt"
	"sort"
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
	fresh := invertAdded(docs, uint32(kept))
	if kept == p.NumDocs() {
		return p.appended(fresh, docs), nil
	}
	oldDF := p.keptDF(remap)
	q := &Postings{Terms: mergeTerms(p.Terms, oldDF, fresh.words)}
	q.Ptr = make([]int64, q.Terms.Len()+1)
	from := make([]int, q.Terms.Len()) // new term → old term id, or -1
	for t, o := 0, 0; t < q.Terms.Len(); t++ {
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

// appended is Update when every document is kept: the added documents
// follow p's, so each term's list is its old one (copied whole) then the
// added postings, and the term table is p's with the new words inserted
// where they sort. It costs a copy of p's arrays and a binary search per
// added word, where the general case compares every term and renumbers
// every posting.
func (p *Postings) appended(fresh addedPostings, docs []docTerms) *Postings {
	// at[i]: where fresh word i goes among p's terms; known[i]: it is p's term at[i].
	at := make([]int, len(fresh.words))
	known := make([]bool, len(fresh.words))
	newWords := 0
	for i, w := range fresh.words {
		at[i] = sort.Search(p.Terms.Len(), func(t int) bool { return p.Terms.Term(t) >= w })
		known[i] = at[i] < p.Terms.Len() && p.Terms.Term(at[i]) == w
		if !known[i] {
			newWords++
		}
	}
	q := &Postings{Terms: TermTable{Off: make([]int64, 1, p.Terms.Len()+newWords+1)}}
	q.Terms.Blob = make([]byte, 0, len(p.Terms.Blob)+newBytes(fresh.words, known))
	q.Ptr = make([]int64, 1, p.Terms.Len()+newWords+1)
	total := len(p.Doc)
	for _, w := range fresh.words {
		total += len(fresh.docs[w])
	}
	q.Doc, q.TF = make([]uint32, 0, total), make([]uint32, 0, total)
	old := 0 // next of p's terms to copy
	copyOld := func(to int) {
		if to <= old {
			return
		}
		shift := int64(len(q.Terms.Blob)) - p.Terms.Off[old]
		q.Terms.Blob = append(q.Terms.Blob, p.Terms.Blob[p.Terms.Off[old]:p.Terms.Off[to]]...)
		pshift := int64(len(q.Doc)) - p.Ptr[old]
		q.Doc = append(q.Doc, p.Doc[p.Ptr[old]:p.Ptr[to]]...)
		q.TF = append(q.TF, p.TF[p.Ptr[old]:p.Ptr[to]]...)
		for t := old + 1; t <= to; t++ {
			q.Terms.Off = append(q.Terms.Off, p.Terms.Off[t]+shift)
			q.Ptr = append(q.Ptr, p.Ptr[t]+pshift)
		}
		old = to
	}
	for i, w := range fresh.words {
		copyOld(at[i]) // p's terms before w
		if known[i] {
			// w is p's term at[i]: its old list, then the added postings
			q.Doc = append(q.Doc, p.Doc[p.Ptr[old]:p.Ptr[old+1]]...)
			q.TF = append(q.TF, p.TF[p.Ptr[old]:p.Ptr[old+1]]...)
			old++
		}
		q.Terms.Blob = append(q.Terms.Blob, w...)
		q.Terms.Off = append(q.Terms.Off, int64(len(q.Terms.Blob)))
		for _, e := range fresh.docs[w] {
			q.Doc, q.TF = append(q.Doc, e.doc), append(q.TF, e.tf)
		}
		q.Ptr = append(q.Ptr, int64(len(q.Doc)))
	}
	copyOld(p.Terms.Len())
	q.DocLen = make([]uint32, len(p.DocLen), len(p.DocLen)+len(docs))
	copy(q.DocLen, p.DocLen)
	for i := range docs {
		q.DocLen = append(q.DocLen, docs[i].n)
	}
	return q
}

// newBytes is the length of the words not known.
func newBytes(words []string, known []bool) int {
	n := 0
	for i, w := range words {
		if !known[i] {
			n += len(w)
		}
	}
	return n
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
func (p *Postings) keptDF(remap []int32) []int64 {
	df := make([]int64, p.Terms.Len())
	for t := range df {
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

// invertAdded inverts analysed documents numbered from first.
func invertAdded(docs []docTerms, first uint32) addedPostings {
	a := addedPostings{docs: map[string][]posting{}}
	for i := range docs {
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
func mergeTerms(old TermTable, df []int64, added []string) TermTable {
	t := TermTable{Off: make([]int64, 1, old.Len()+len(added)+1)}
	push := func(w string) {
		t.Blob = append(t.Blob, w...)
		t.Off = append(t.Off, int64(len(t.Blob)))
	}
	i, j := 0, 0
	for i < old.Len() || j < len(added) {
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
