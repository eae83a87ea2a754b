package graphops

import (
	"github.com/gleaner-rag/gleaner/internal/strtab"
	"hash/maphash"
	"slices"
	"strings"
	"unicode/utf8"
)

// patternIndex finds the title patterns a text holds as whole words. A
// whole-word match of a pattern whose first word is w begins where the
// text has the word w (less the pattern's leading non-word characters),
// and when the pattern goes on to a second word, the text's next word is
// that word too: patterns are indexed by both, so that a common first
// word ("The", "John") does not make every text try every pattern that
// starts with it. Patterns without a word at all are tried everywhere.
//
// Patterns are held by the numbers their caller gives them, and the
// words by hash, in maps and set pools the collector does not scan: two
// words of one hash only make a text try more patterns, each checked in
// full.
type patternIndex struct {
	hash    func(string) uint64 // a word's hash
	pattern func(int32) string  // number → pattern
	lead    []int32             // number → bytes before its first word
	first   map[uint64]int32    // first word → entry
	one     strtab.Sets         // entry → patterns of no second word
	seconds []int32             // entry → patterns with a second word
	unused  []int32             // entry numbers to reuse
	next    map[uint64]int32    // first and second word → set in nexts
	nexts   strtab.Sets
	free    []int32        // set numbers in nexts to reuse
	noWord  map[int32]bool // patterns without a word
}

// newPatternIndex indexes the patterns pattern names by number.
func newPatternIndex(pattern func(int32) string) patternIndex {
	seed := maphash.MakeSeed()
	return patternIndex{pattern: pattern, hash: func(w string) uint64 { return maphash.String(seed, w) }, first: map[uint64]int32{}, next: map[uint64]int32{}, noWord: map[int32]bool{}}
}

// pair hashes a first and a second word.
func (x *patternIndex) pair(first, second string) uint64 {
	h := x.hash(first) * 0x9e3779b97f4a7c15
	return h ^ x.hash(second)
}

// has reports whether pattern v is in the set of pair hash hp.
func (x *patternIndex) has(hp uint64, v int32) bool {
	n, ok := x.next[hp]
	if !ok {
		return false
	}
	_, found := slices.BinarySearch(x.nexts.Get(n), v)
	return found
}

// words splits p into its leading non-word bytes, its first word and the
// word after it ("" when none).
func words(p string) (lead int, first, second string) {
	lead = nextWord(p, 0)
	if lead == len(p) {
		return lead, "", ""
	}
	first = firstWord(p[lead:])
	return lead, first, wordAt(p, lead+len(first))
}

// nextWord is the offset of the first word character at or after i
// (len(s) when none).
func nextWord(s string, i int) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if isWord(r) {
			return i
		}
		i += size
	}
	return i
}

// wordAt is the first word at or after offset i of s ("" when none).
func wordAt(s string, i int) string {
	j := nextWord(s, i)
	return firstWord(s[j:])
}

// add indexes pattern number v.
func (x *patternIndex) add(v int32) {
	for int(v) >= len(x.lead) {
		x.lead = append(x.lead, 0)
	}
	lead, first, second := words(x.pattern(v))
	x.lead[v] = int32(lead)
	if first == "" {
		x.noWord[v] = true
		return
	}
	hf := x.hash(first)
	e, ok := x.first[hf]
	if !ok {
		e = x.newEntry()
		x.first[hf] = e
	}
	if second == "" {
		x.one.Insert(e, v)
		return
	}
	x.seconds[e]++
	hp := x.pair(first, second)
	n, ok := x.next[hp]
	if !ok {
		n = strtab.Take(&x.free, len(x.next))
		x.next[hp] = n
	}
	x.nexts.Insert(n, v)
}

// newEntry is a number for a new first word's entry.
func (x *patternIndex) newEntry() int32 {
	e := strtab.Take(&x.unused, len(x.first))
	if int(e) == len(x.seconds) {
		x.seconds = append(x.seconds, 0)
	}
	return e
}

// remove unindexes pattern number v (its pattern still named).
func (x *patternIndex) remove(v int32) {
	_, first, second := words(x.pattern(v))
	if first == "" {
		delete(x.noWord, v)
		return
	}
	hf := x.hash(first)
	e, ok := x.first[hf]
	if !ok {
		return
	}
	if second == "" {
		x.one.Remove(e, v)
	} else if hp := x.pair(first, second); x.has(hp, v) {
		n := x.next[hp]
		x.nexts.Remove(n, v)
		x.seconds[e]--
		if x.nexts.Size(n) == 0 {
			delete(x.next, hp)
			x.free = append(x.free, n)
		}
	}
	if x.one.Size(e) == 0 && x.seconds[e] == 0 {
		delete(x.first, hf)
		x.unused = append(x.unused, e)
	}
}

// hits lists the patterns text holds as whole words, each once, by
// number.
func (x *patternIndex) hits(text string) []int32 {
	var out []int32
	try := func(pos int, v int32) {
		p := x.pattern(v)
		start := pos - int(x.lead[v])
		if start < 0 || !strings.HasPrefix(text[start:], p) || !boundary(text, start, start+len(p)) || slices.Contains(out, v) {
			return
		}
		out = append(out, v)
	}
	eachWord(text, func(pos int, word string) {
		e, ok := x.first[x.hash(word)]
		if !ok {
			return
		}
		for _, v := range x.one.Get(e) {
			try(pos, v)
		}
		if x.seconds[e] > 0 {
			if n, ok := x.next[x.pair(word, wordAt(text, pos+len(word)))]; ok {
				for _, v := range x.nexts.Get(n) {
					try(pos, v)
				}
			}
		}
	})
	for v := range x.noWord {
		if holdsWord(text, x.pattern(v)) {
			out = append(out, v)
		}
	}
	return out
}
