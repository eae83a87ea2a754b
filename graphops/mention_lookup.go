package graphops

import (
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
type patternIndex struct {
	byFirst map[string]*firstEntry
	noWord  map[string]bool
}

type firstEntry struct {
	one  []indexedPattern            // no second word
	next map[string][]indexedPattern // by their second word
}

// indexedPattern is a pattern and the bytes before its first word.
type indexedPattern struct {
	p    string
	lead int
}

func newPatternIndex() patternIndex {
	return patternIndex{byFirst: map[string]*firstEntry{}, noWord: map[string]bool{}}
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

func (x *patternIndex) add(p string) {
	lead, first, second := words(p)
	if first == "" {
		x.noWord[p] = true
		return
	}
	fw := x.byFirst[first]
	if fw == nil {
		fw = &firstEntry{}
		x.byFirst[strings.Clone(first)] = fw // keys outlive the pattern they came from
	}
	ip := indexedPattern{p, lead}
	if second == "" {
		fw.one = append(fw.one, ip)
		return
	}
	if fw.next == nil {
		fw.next = map[string][]indexedPattern{}
	}
	if _, ok := fw.next[second]; !ok {
		second = strings.Clone(second)
	}
	fw.next[second] = append(fw.next[second], ip)
}

func (x *patternIndex) remove(p string) {
	_, first, second := words(p)
	if first == "" {
		delete(x.noWord, p)
		return
	}
	fw := x.byFirst[first]
	if fw == nil {
		return
	}
	other := func(q indexedPattern) bool { return q.p == p }
	if second == "" {
		fw.one = slices.DeleteFunc(fw.one, other)
	} else if rest := slices.DeleteFunc(fw.next[second], other); len(rest) == 0 {
		delete(fw.next, second)
	} else {
		fw.next[second] = rest
	}
	if len(fw.one) == 0 && len(fw.next) == 0 {
		delete(x.byFirst, first)
	}
}

// hits lists the patterns text holds as whole words, each once.
func (x *patternIndex) hits(text string) []string {
	var out []string
	var seen map[string]bool
	try := func(pos int, c indexedPattern) {
		start := pos - c.lead
		if start < 0 || !strings.HasPrefix(text[start:], c.p) || !boundary(text, start, start+len(c.p)) || seen[c.p] {
			return
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[c.p] = true
		out = append(out, c.p)
	}
	eachWord(text, func(pos int, word string) {
		fw := x.byFirst[word]
		if fw == nil {
			return
		}
		for _, c := range fw.one {
			try(pos, c)
		}
		if len(fw.next) > 0 {
			for _, c := range fw.next[wordAt(text, pos+len(word))] {
				try(pos, c)
			}
		}
	})
	for p := range x.noWord {
		if holdsWord(text, p) {
			out = append(out, p)
		}
	}
	return out
}
