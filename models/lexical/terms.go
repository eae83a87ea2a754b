package lexical

import (
	"slices"
	"sort"
	"strings"
	"unsafe"
)

// TermTable is a sorted term dictionary stored as one byte blob plus offsets,
// so it can live in a memory-mapped file and be searched without parsing.
// A table that live updates extended (Postings.Update) also has words
// added after the sorted ones, numbered after them; Flat sorts them in.
type TermTable struct {
	Blob []byte
	Off  []int64 // len = sorted terms+1
	more *moreTerms
}

// moreTerms are words added after a table's sorted ones: word i has id
// (sorted terms)+i. Never written once a table holds it.
type moreTerms struct {
	words []string
	ids   map[string]int32
}

// Added is how many words follow the sorted ones (0 for a table read
// from disk or built whole).
func (t TermTable) Added() int {
	if t.more == nil {
		return 0
	}
	return len(t.more.words)
}

// sortedLen is the number of sorted terms.
func (t TermTable) sortedLen() int { return len(t.Off) - 1 }

// with returns t with words (none of them in t) added after its terms;
// t is not changed.
func (t TermTable) with(words []string) TermTable {
	if len(words) == 0 {
		return t
	}
	m := &moreTerms{ids: make(map[string]int32, t.Added()+len(words))}
	if t.more != nil {
		m.words = append(make([]string, 0, len(t.more.words)+len(words)), t.more.words...)
		for w, id := range t.more.ids {
			m.ids[w] = id
		}
	}
	for _, w := range words {
		m.ids[w] = int32(t.sortedLen() + len(m.words))
		m.words = append(m.words, w)
	}
	return TermTable{Blob: t.Blob, Off: t.Off, more: m}
}

// sortedOrder is t's term ids in the order of their words: the sorted
// ones merged with the added ones, sorted (fewer, so this is much less
// than a sort of them all).
func (t TermTable) sortedOrder() []int32 {
	n := t.sortedLen()
	added := make([]int32, t.Added())
	for i := range added {
		added[i] = int32(n + i)
	}
	slices.SortFunc(added, func(a, b int32) int { return strings.Compare(t.Term(int(a)), t.Term(int(b))) })
	out := make([]int32, 0, n+len(added))
	i, j := 0, 0
	for i < n || j < len(added) {
		if j == len(added) || (i < n && t.Term(i) < t.Term(int(added[j]))) {
			out = append(out, int32(i))
			i++
		} else {
			out = append(out, added[j])
			j++
		}
	}
	return out
}

// NewTermTable builds a table from distinct terms, sorting them.
func NewTermTable(terms []string) TermTable {
	s := append([]string(nil), terms...)
	sort.Strings(s)
	t := TermTable{Off: make([]int64, 1, len(s)+1)}
	for _, w := range s {
		t.Blob = append(t.Blob, w...)
		t.Off = append(t.Off, int64(len(t.Blob)))
	}
	return t
}

// Len is the number of terms.
func (t TermTable) Len() int { return len(t.Off) - 1 + t.Added() }

// Term returns term i without copying.
func (t TermTable) Term(i int) string {
	if n := t.sortedLen(); i >= n {
		return t.more.words[i-n]
	}
	b := t.Blob[t.Off[i]:t.Off[i+1]]
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// Lookup returns the id of term w, or -1.
func (t TermTable) Lookup(w string) int {
	n := t.sortedLen()
	i := sort.Search(n, func(i int) bool { return t.Term(i) >= w })
	if i < n && t.Term(i) == w {
		return i
	}
	if t.more != nil {
		if id, ok := t.more.ids[w]; ok {
			return int(id)
		}
	}
	return -1
}

// extends reports whether t is old with words added after it (Update's
// append), so old's ids stand in t.
func (t TermTable) extends(old TermTable) bool {
	if len(t.Off) != len(old.Off) || len(t.Off) == 0 || &t.Off[0] != &old.Off[0] || t.Added() < old.Added() {
		return false
	}
	return old.Added() == 0 || (t.more.words[0] == old.more.words[0] && t.more.ids[old.more.words[old.Added()-1]] == int32(old.Len()-1))
}
