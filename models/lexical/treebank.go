package lexical

import (
	"regexp"
	"strings"
)

// Word tokenization as NLTK's word_tokenize (NLTKWordTokenizer, the
// Treebank tokenizer with NLTK's improvements) splits a sentence, which
// KET-RAG's keyword index uses (docs/methods.md §4.2). This ports its
// rules — quotes (straight, curly, guillemets) to `` and '' or split off,
// punctuation, ellipses and a sentence-final period split off, clitics
// ('s, n't, 're, …) and the contractions cannot, gonna, 'tis, … split —
// except the one rule that needs look-ahead (a quote before a word that
// is not a clitic), which Go's regexp lacks.

type rewrite struct {
	re  *regexp.Regexp
	rep string
}

func rules(pairs ...string) []rewrite {
	out := make([]rewrite, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, rewrite{regexp.MustCompile(pairs[i]), pairs[i+1]})
	}
	return out
}

var (
	startQuotes = rules("([«“‘„]|`+)", " $1 ", `^"`, "``", "(``)", " $1 ", `([ (\[{<])("|'')`, "$1 `` ")
	punctuation = rules(
		`([:,])([^\d])`, " $1 $2",
		`([:,])$`, " $1 ",
		`\.{2,}`, " $0 ",
		`[;@#$%&]`, " $0 ",
		`([^.])(\.)([\])}>"']*)\s*$`, "$1 $2$3 ",
		`[?!]`, " $0 ",
		`([^'])' `, "$1 ' ",
		`[*]`, " $0 ",
		`[\]\[(){}<>]`, " $0 ",
		`--`, " -- ",
	)
	endQuotes   = rules(`([»”’])`, " $1 ", `''`, " '' ", `"`, " '' ")
	contraction = rules(
		`([^' ])('[sS]|'[mM]|'[dD]|') `, "$1 $2 ",
		`([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) `, "$1 $2 ",
		`(?i)\b(can)(not)\b`, " $1 $2 ",
		`(?i)\b(d)('ye)\b`, " $1 $2 ",
		`(?i)\b(gim)(me)\b`, " $1 $2 ",
		`(?i)\b(gon)(na)\b`, " $1 $2 ",
		`(?i)\b(got)(ta)\b`, " $1 $2 ",
		`(?i)\b(lem)(me)\b`, " $1 $2 ",
		`(?i)\b(more)('n)\b`, " $1 $2 ",
		`(?i)\b(wan)(na)(\s)`, " $1 $2$3",
		`(?i) ('t)(is)\b`, " $1 $2 ",
		`(?i) ('t)(was)\b`, " $1 $2 ",
	)
)

// TreebankWords splits one sentence into NLTK-style word tokens.
func TreebankWords(sentence string) []string {
	s := sentence
	for _, group := range [][]rewrite{startQuotes, punctuation} {
		for _, r := range group {
			s = r.re.ReplaceAllString(s, r.rep)
		}
	}
	s = " " + s + " "
	for _, group := range [][]rewrite{endQuotes, contraction} {
		for _, r := range group {
			s = r.re.ReplaceAllString(s, r.rep)
		}
	}
	return strings.Fields(s)
}

// asciiPunctuation is Python's string.punctuation.
const asciiPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// IsKeyword is KET-RAG's keyword test: not one of NLTK's English stop
// words (checked case-sensitively against the lower-case list, so "The"
// is a keyword) and not a substring of ASCII punctuation (so "," is not,
// while "“" and "”" are).
func IsKeyword(tok string) bool {
	return !nltkStopwords[tok] && !strings.Contains(asciiPunctuation, tok)
}

// IsStopWord reports whether w (lower case) is one of NLTK's English stop
// words.
func IsStopWord(w string) bool { return nltkStopwords[w] }

// nltkStopwords is NLTK's English stop-word list (179 words).
var nltkStopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`i me my myself we our ours ourselves you you're you've you'll you'd your
	yours yourself yourselves he him his himself she she's her hers herself it it's its itself they them
	their theirs themselves what which who whom this that that'll these those am is are was were be been
	being have has had having do does did doing a an the and but if or because as until while of at by for
	with about against between into through during before after above below to from up down in out on off
	over under again further then once here there when where why how all any both each few more most other
	some such no nor not only own same so than too very s t can will just don don't should should've now d
	ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven
	haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn
	wasn't weren weren't won won't wouldn wouldn't`) {
		m[w] = true
	}
	return m
}()
