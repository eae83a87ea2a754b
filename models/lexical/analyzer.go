package lexical

import (
	"strings"
	"unicode"

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
	if len(tok) == 0 {
		return "", false
	}
	s := string(tok)
	if stopwords[s] {
		return "", false
	}
	if letters && len(tok) > 2 {
		s = string(porter.Stem(tok))
	}
	return s, true
}

func isApos(r rune) bool { return r == '\'' || r == '’' }

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

func isIdeograph(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)
}

// eachToken splits text into raw tokens (step 1 of the analyzer).
func eachToken(text string, emit func([]rune)) {
	rs := []rune(text)
	var tok []rune
	flush := func() {
		if len(tok) > 0 {
			emit(tok)
			tok = nil
		}
	}
	for i, r := range rs {
		switch {
		case isIdeograph(r):
			flush()
			emit([]rune{r})
		case isWordRune(r):
			tok = append(tok, r)
		case len(tok) > 0 && i+1 < len(rs) && joins(tok[len(tok)-1], r, rs[i+1]):
			tok = append(tok, r)
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
