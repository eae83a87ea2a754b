package ner

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jdkato/prose/v2"
)

// prose's tokenizer caches the tokens of each whitespace-separated span of
// a sentence and appends the same *Token values when the span recurs, so
// the tagger's and classifier's writes to a later occurrence overwrite the
// earlier ones ("U.S. … U.S." both end with the second one's label). The
// tags prose returns already show this; lastAliases lets the labels show it
// too, so entities are exactly prose's. Only the sentence's last span is
// never cached.

// proseSanitizer is prose's tokenizer's replacer, applied before splitting.
var proseSanitizer = strings.NewReplacer(
	"\u201c", `"`,
	"\u201d", `"`,
	"\u2018", "'",
	"\u2019", "'",
	"&rsquo;", "'")

// lastAliases returns, for each of the n tokens prose made of sentence, the
// index of the last token sharing its *Token (itself if none), or false if
// spans recur and their token counts do not add up to n.
func lastAliases(sentence string, n int) ([]int, bool) {
	cached, final := proseSpans(proseSanitizer.Replace(sentence))
	last := make([]int, n)
	for i := range last {
		last[i] = i
	}
	if !repeats(cached) {
		return last, true
	}
	counts := map[string]int{}
	at := 0
	var order []int // where each cached span occurrence's tokens start
	for _, s := range cached {
		c, ok := counts[s]
		if !ok {
			c = countTokens(s)
			counts[s] = c
		}
		order = append(order, at)
		at += c
	}
	if final != "" {
		at += countTokens(final)
	}
	if at != n {
		return nil, false
	}
	// Walk the occurrences backwards: each points at its span's latest.
	latestAt := map[string]int{}
	for k := len(cached) - 1; k >= 0; k-- {
		s, start := cached[k], order[k]
		if latest, seen := latestAt[s]; seen {
			for t := range counts[s] {
				last[start+t] = latest + t
			}
			continue
		}
		latestAt[s] = start
	}
	return last, true
}

// repeats says whether a span occurs twice.
func repeats(spans []string) bool {
	seen := make(map[string]bool, len(spans))
	for _, s := range spans {
		if seen[s] {
			return true
		}
		seen[s] = true
	}
	return false
}

// proseSpans splits clean as prose's iterTokenizer.tokenize does: the
// spans between changes of white space that it caches, without the white
// ones (they make no token), and the uncached last span ("" if white).
func proseSpans(clean string) (cached []string, final string) {
	start, index, white := 0, 0, false
	for index <= len(clean) {
		uc, size := utf8.DecodeRuneInString(clean[index:])
		if size == 0 {
			break
		} else if index == 0 {
			white = unicode.IsSpace(uc)
		}
		if unicode.IsSpace(uc) != white {
			if start < index && !white {
				cached = append(cached, clean[start:index])
			}
			start = index // prose skips a leading ' ' of a white span: no token either way
			white = !white
		}
		index += size
	}
	if start < index && !white {
		final = clean[start:index]
	}
	return cached, final
}

// countTokens is the number of tokens prose's tokenizer makes of one span,
// or a large negative number (so the sum cannot match) if prose fails.
func countTokens(span string) (n int) {
	const failed = -1 << 30
	defer func() {
		if recover() != nil {
			n = failed
		}
	}()
	doc, err := prose.NewDocument(span, prose.WithSegmentation(false), prose.WithTagging(false), prose.WithExtraction(false))
	if err != nil {
		return failed
	}
	return len(doc.Tokens())
}

// aliasLabels gives each token the label of the last token sharing it.
func aliasLabels(labels []string, last []int) {
	for i, j := range last {
		labels[i] = labels[j]
	}
}
