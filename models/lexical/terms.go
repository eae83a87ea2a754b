package lexical

import (
	"sort"
	"unsafe"
)

// TermTable is a sorted term dictionary stored as one byte blob plus offsets,
// so it can live in a memory-mapped file and be searched without parsing.
type TermTable struct {
	Blob []byte
	Off  []int64 // len = terms+1
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
func (t TermTable) Len() int { return len(t.Off) - 1 }

// Term returns term i without copying.
func (t TermTable) Term(i int) string {
	b := t.Blob[t.Off[i]:t.Off[i+1]]
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// Lookup returns the id of term w, or -1.
func (t TermTable) Lookup(w string) int {
	i := sort.Search(t.Len(), func(i int) bool { return t.Term(i) >= w })
	if i < t.Len() && t.Term(i) == w {
		return i
	}
	return -1
}
