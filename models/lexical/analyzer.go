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
	if t, ok, ascii := normalizeASCII(tok); ascii {
		return t, ok
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

// normalizeASCII is normalizeToken for a token of ASCII runes no longer
// than asciiMax (ascii false for any other), without the unicode tables;
// stems come from stemASCII's cache.
func normalizeASCII(tok []rune) (t string, ok, ascii bool) {
	var b [asciiMax]byte
	if len(tok) == 0 || len(tok) > len(b) {
		return "", false, false
	}
	letters := true
	for i, r := range tok {
		if r >= utf8.RuneSelf {
			return "", false, false
		}
		c := byte(r)
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		letters = letters && 'a' <= c && c <= 'z'
		b[i], tok[i] = c, rune(c)
	}
	w := b[:len(tok)]
	if stopwords[string(w)] {
		return "", false, true
	}
	if letters && len(w) > 2 {
		return stemASCII(w, tok), true, true
	}
	return string(w), true, true
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
// reads as one U+FFFD per byte, as a conversion to []rune reads it. An
// ASCII byte is classified by asciiWord: no ASCII rune is an ideograph or
// a mark, and its letters and digits are unicode's.
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
		var r rune
		if c := text[i]; c < utf8.RuneSelf {
			r = rune(c)
			i++
			if asciiWord[c] {
				tok = append(tok, r)
				continue
			}
		} else {
			var w int
			r, w = utf8.DecodeRuneInString(text[i:])
			i += w
			if isIdeograph(r) {
				flush()
				one[0] = r
				emit(one[:])
				continue
			}
			if isWordRune(r) {
				tok = append(tok, r)
				continue
			}
		}
		if len(tok) > 0 && i < len(text) && mayJoin(r) {
			if next, _ := utf8.DecodeRuneInString(text[i:]); joins(tok[len(tok)-1], r, next) {
				tok = append(tok, r)
				continue
			}
		}
		flush()
	}
	flush()
}

// asciiWord marks the ASCII letters and digits.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	return t
}()

// mayJoin reports whether sep is one of the separators joins can keep.
func mayJoin(sep rune) bool { return isApos(sep) || sep == '.' || sep == ',' }

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
