package lexical

import (
	"hash/maphash"
	"sync/atomic"

	porter "github.com/blevesearch/go-porterstemmer"
)

// asciiMax is the longest token normalizeASCII handles (longer ones take
// the general path).
const asciiMax = 48

// stemSlots is the stem cache's size: a direct-mapped table, so its
// memory is bounded (a few MiB at most) whatever the corpus, and a
// frequent word keeps its slot under a Zipfian vocabulary.
const stemSlots = 1 << 15

// stemEntry is one cached word and its stem; entries are never changed,
// only replaced, so readers need no lock.
type stemEntry struct{ word, stem string }

var (
	stemSeed  = maphash.MakeSeed()
	stemCache [stemSlots]atomic.Pointer[stemEntry]
	// stemTags holds each slot's word hash, read before the entry so that
	// a miss costs one load from this table rather than following the
	// entry's pointers. It may disagree with the slot for a moment (a
	// writer stores the entry first); the word comparison decides.
	stemTags [stemSlots]atomic.Uint64
)

// stemASCII is the Porter stem of the lowercase ASCII word w, whose runes
// are tok (scratch: the stemmer may change them), cached: stemming was a
// fifth of analysis, and each token's string most of its allocations.
// A miss costs two allocations: the word and its stem in one string, and
// the entry. Safe for concurrent use.
func stemASCII(w []byte, tok []rune) string {
	h := maphash.Bytes(stemSeed, w)
	i := h & (stemSlots - 1)
	if stemTags[i].Load() == h {
		if e := stemCache[i].Load(); e != nil && e.word == string(w) {
			return e.stem
		}
	}
	st := porter.Stem(tok)
	var buf [2 * asciiMax]byte
	b := append(buf[:0], w...)
	for _, r := range st { // the stem of ASCII letters is ASCII letters
		b = append(b, byte(r))
	}
	both := string(b)
	e := &stemEntry{word: both[:len(w)], stem: both[len(w):]}
	stemCache[i].Store(e)
	stemTags[i].Store(h)
	return e.stem
}
