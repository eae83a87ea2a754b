package lexical

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	porter "github.com/blevesearch/go-porterstemmer"
)

// referenceAnalyze is the analyzer written rune by rune through the
// unicode tables, with no fast paths: Analyze must equal it on any input.
func referenceAnalyze(text string) []string {
	var out []string
	var tok []rune
	flush := func() {
		if len(tok) > 0 {
			if t, ok := referenceNormalize(tok); ok {
				out = append(out, t)
			}
			tok = tok[:0]
		}
	}
	for i := 0; i < len(text); {
		r, w := utf8.DecodeRuneInString(text[i:])
		i += w
		switch {
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana):
			flush()
			tok = append(tok, r)
			flush()
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			tok = append(tok, r)
		case len(tok) > 0 && i < len(text):
			next, _ := utf8.DecodeRuneInString(text[i:])
			prev := tok[len(tok)-1]
			apos := r == '\'' || r == '’'
			if apos && unicode.IsLetter(prev) && unicode.IsLetter(next) ||
				(r == '.' || r == ',') && unicode.IsDigit(prev) && unicode.IsDigit(next) {
				tok = append(tok, r)
				continue
			}
			flush()
		default:
			flush()
		}
	}
	flush()
	return out
}

func referenceNormalize(tok []rune) (string, bool) {
	n := len(tok)
	if n >= 2 && (tok[n-2] == '\'' || tok[n-2] == '’') && (tok[n-1] == 's' || tok[n-1] == 'S') {
		tok = tok[:n-2]
	}
	letters := true
	low := make([]rune, len(tok))
	for i, r := range tok {
		low[i] = unicode.ToLower(r)
		letters = letters && unicode.IsLetter(r)
	}
	if len(low) == 0 || stopwords[string(low)] {
		return "", false
	}
	if letters && len(low) > 2 {
		return string(porter.Stem(low)), true
	}
	return string(low), true
}

// analyzerPieces are the fragments the random texts are made of: ASCII
// words, digits and separators, and the non-ASCII cases (letters, marks,
// ideographs, the typographic apostrophe, invalid bytes).
var analyzerPieces = []string{
	"a", "The", "cats", "RUNNING", "quickly", "x", "Ab", "z9", "42", "3", ".", ",", "'", "’", "s", "S",
	" ", "  ", "\n", "\t", "-", "/", "(", ")", "!", "?", "\"", ":", ";", "_", "#", "@", "&", "+", "=", "~",
	"é", "Ï", "ß", "İ", "ǅ", "Σ", "ς", "\u0301", "\u0664", "東", "タ", "ー", "한", "\xff", "\xc3", "\x80",
	"\u00a0", "\u2009", "\u200b", "of", "and", "it's", "don't", "1,000", "3.14",
}

// randomText joins n random pieces.
func randomText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(analyzerPieces[rng.IntN(len(analyzerPieces))])
	}
	return b.String()
}

func TestAnalyzeEqualsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 20000 {
		text := randomText(rng, 1+rng.IntN(24))
		if got, want := Analyze(text), referenceAnalyze(text); !reflect.DeepEqual(got, want) {
			t.Fatalf("text %d %q: Analyze = %q, the reference %q", i, text, got, want)
		}
	}
	for r := rune(0); r < 0x3100; r++ { // every rune of the common blocks, alone and between letters
		for _, text := range []string{string(r), "ab" + string(r) + "cd", "1" + string(r) + "2", string(r) + "s"} {
			if got, want := Analyze(text), referenceAnalyze(text); !reflect.DeepEqual(got, want) {
				t.Fatalf("rune %U in %q: Analyze = %q, the reference %q", r, text, got, want)
			}
		}
	}
}

func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{"The cats are running", "Franklin's 3.5 mg/kg", "NAÏVE Café 東京", "it’s\xff1,000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := Analyze(text), referenceAnalyze(text); !reflect.DeepEqual(got, want) {
			t.Fatalf("Analyze(%q) = %q, the reference %q", text, got, want)
		}
	})
}

// benchmarkText is a generated passage of about 100 words (no dataset
// text): mostly ASCII prose with a few digits, possessives and accents.
func benchmarkText() string {
	rng := rand.New(rand.NewPCG(3, 5))
	words := []string{"river", "station", "composed", "the", "album", "released", "history", "of", "northern",
		"Franklin's", "1,200", "in", "national", "festival", "recorded", "and", "born", "Café", "university",
		"championship", "published", "directed", "village", "located", "3.5", "a", "player", "television"}
	var b strings.Builder
	for i := range 100 {
		if i > 0 {
			b.WriteString([]string{" ", " ", " ", ", ", ". "}[rng.IntN(5)])
		}
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()
}

// novelText is a passage of about 100 random lowercase words, nearly all
// new to the stem cache.
func novelText(rng *rand.Rand) string {
	var b strings.Builder
	for i := range 100 {
		if i > 0 {
			b.WriteByte(' ')
		}
		for range 4 + rng.IntN(6) {
			b.WriteByte(byte('a' + rng.IntN(26)))
		}
	}
	return b.String()
}

// BenchmarkAnalyze: "prose" repeats a small vocabulary (the stem cache
// hits), "novel-words" draws new words (it misses).
func BenchmarkAnalyze(b *testing.B) {
	b.Run("prose", func(b *testing.B) {
		text := benchmarkText()
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			Analyze(text)
		}
	})
	b.Run("novel-words", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(9, 9))
		texts := make([]string, 1024)
		for i := range texts {
			texts[i] = novelText(rng)
		}
		b.SetBytes(int64(len(texts[0])))
		i := 0
		for b.Loop() {
			Analyze(texts[i%len(texts)])
			i++
		}
	})
}

// TestStemCacheUnderEviction: more distinct words than the cache has
// slots, stemmed from two goroutines, each equal to the stemmer's own.
func TestStemCacheUnderEviction(t *testing.T) {
	words := make([]string, 3*stemSlots)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range words {
		b := make([]byte, 3+rng.IntN(10))
		for j := range b {
			b[j] = byte('a' + rng.IntN(26))
		}
		words[i] = string(b)
	}
	errs := make(chan string, 2)
	for g := range 2 {
		go func() {
			bad := ""
			for i := range 2 * len(words) {
				w := words[(i*(g+1)+g)%len(words)]
				tok := []rune(w)
				if got, want := stemASCII([]byte(w), tok), string(porter.Stem([]rune(w))); got != want && bad == "" {
					bad = fmt.Sprintf("stemASCII(%q) = %q, want %q", w, got, want)
				}
			}
			errs <- bad
		}()
	}
	for range 2 {
		if bad := <-errs; bad != "" {
			t.Error(bad)
		}
	}
}
