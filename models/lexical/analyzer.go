package lexical

import (
	"strings"
	"unicode"
	"unicode/utf8"

	porter "github.com/blevesearch/go-porterstemmer"
)

// stopwords is Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be but by for if in into is it no not of on or
		such that the their then there these they this to was will with`) {
		m[w] = true
	}
	return m
}()

// IsStopword reports whether the lowercased word is an English stopword.
func IsStopword(w string) bool { return stopwords[w] }

// Analyze returns the index terms of text, in order, with repeats.
func Analyze(text string) []string {
	var out []string
	eachToken(text, func(tok []rune) {
		if t, ok := normalizeToken(tok); ok {
			out = append(out, t)
		}
	})
	return out
}

// normalizeToken applies steps 2–5 of the analyzer to one raw token.
func normalizeToken(tok []rune) (string, bool) {
	n := len(tok)
	if n >= 2 && isApos(tok[n-2]) && (tok[n-1] == 's' || tok[n-1] == 'S') {
		tok = tok[:n-2]
	}
	letters := true
	for i, r := range tok {
		tok[i] = unicode.ToLower(r)
		if !unicode.IsLetter(r) {
			letters = false
		}
	}
	if len(tok) == 0 || isStopRunes(tok) {
		return "", false
	}
	if letters && len(tok) > 2 {
		return string(porter.Stem(tok)), true
	}
	return string(tok), true
}

// stopwordMax is the longest stopword's length, at most (all are ASCII;
// TestStopwordsFit checks both).
const stopwordMax = 8

// isStopRunes is stopwords[string(tok)] without making the string: a
// token's strings were most of what analysis allocated.
func isStopRunes(tok []rune) bool {
	var b [stopwordMax]byte
	if len(tok) > len(b) {
		return false
	}
	for i, r := range tok {
		if r >= utf8.RuneSelf {
			return false
		}
		b[i] = byte(r)
	}
	return stopwords[string(b[:len(tok)])]
}

func isApos(r rune) bool { return r == '\'' || r == '’' }

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

func isIdeograph(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)
}

// eachToken splits text into raw tokens (step 1 of the analyzer). The
// token passed to emit is scratch, reused once emit returns. Invalid UTF-8
// reads as one U+FFFD per byte, as a conversion to []rune reads it.
func eachToken(text string, emit func([]rune)) {
	var tok []rune
	var one [1]rune
	flush := func() {
		if len(tok) > 0 {
			emit(tok)
			tok = tok[:0]
		}
	}
	for i := 0; i < len(text); {
		r, w := utf8.DecodeRuneInString(text[i:])
		i += w
		switch {
		case isIdeograph(r):
			flush()
			one[0] = r
			emit(one[:])
		case isWordRune(r):
			tok = append(tok, r)
		case len(tok) > 0 && i < len(text):
			if next, _ := utf8.DecodeRuneInString(text[i:]); joins(tok[len(tok)-1], r, next) {
				tok = append(tok, r)
				continue
			}
			flush()
		default:
			flush()
		}
	}
	flush()
}

// joins reports whether sep, between prev and next, stays inside a token.
func joins(prev, sep, next rune) bool {
	if isApos(sep) {
		return unicode.IsLetter(prev) && unicode.IsLetter(next)
	}
	if sep == '.' || sep == ',' {
		return unicode.IsDigit(prev) && unicode.IsDigit(next)
	}
	return false
}
