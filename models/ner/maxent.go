package ner

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jdkato/prose/v2"
)

// maxent is prose's named-entity classifier, read from the model prose
// embeds and indexed for speed. prose scores a token by building the string
// "feature-value-label" for each of its 17 features and each of 13 labels
// and looking every one up in a map of 150k entries; that was 61 % of a
// Tri-Graph build. Here one lookup of "feature-value" finds the weights of
// every label at once, and the features are computed without maps or
// regular expressions. Scores are the same float64 sums in the same order,
// so labels are prose's, except that a tie goes to the first label in the
// model's order where prose's map iteration picks one at random.
//
// A maxent is read-only after loading and safe for concurrent use.
type maxent struct {
	labels []string              // the model's labels, in its order
	simple []string              // prose's simplePOS of each label: the next token's "prevtag"
	keys   map[string]weightSpan // "feature-value" → its label weights in weights
	weight []labelWeight
	basic  map[string]bool // prose's English word list ("en-wordlist")
}

type weightSpan struct{ start, end int32 }

type labelWeight struct {
	label int32
	w     float64
}

// featureOrder is prose's: per label, its sum runs over the features in
// this order, which fixes the float64 result.
var featureOrder = [numFeatures]string{
	"bias", "en-wordlist", "nextpos", "nextword", "pos", "pos+prevtag",
	"prefix3", "prevpos", "prevtag", "prevword", "shape", "shape+prevtag",
	"suffix3", "word", "word+nextpos", "word.lower", "wordlen"}

const numFeatures = 17

// loadMaxent decodes prose's Maxent assets (labels, "feature-value-label"
// → weight index, weights, word list) and regroups the weights by
// "feature-value".
func loadMaxent() (*maxent, error) {
	var labels, words []string
	var mapping map[string]int
	var weights []float64
	for _, a := range []struct {
		name string
		into any
	}{{"labels", &labels}, {"mapping", &mapping}, {"weights", &weights}, {"words", &words}} {
		if err := decodeAsset("model/Maxent/"+a.name+".gob", a.into); err != nil {
			return nil, err
		}
	}
	m := &maxent{labels: labels, basic: make(map[string]bool, len(words))}
	for _, w := range words {
		m.basic[w] = true
	}
	for _, l := range labels {
		m.simple = append(m.simple, simplePOS(l))
	}
	if err := m.index(mapping, weights); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeAsset gob-decodes one of the files prose embeds.
func decodeAsset(name string, into any) error {
	b, err := prose.Asset(name)
	if err != nil {
		return fmt.Errorf("ner: prose asset %s: %w", name, err)
	}
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(into); err != nil {
		return fmt.Errorf("ner: decoding prose asset %s: %w", name, err)
	}
	return nil
}

// index groups the mapping's entries by their "feature-value" prefix. An
// entry is filed under every label it ends in ("-"+label), so a lookup
// finds exactly the entries prose's joined string would.
func (m *maxent) index(mapping map[string]int, weights []float64) error {
	byKey := map[string][]labelWeight{}
	for entry, at := range mapping {
		if at < 0 || at >= len(weights) {
			return fmt.Errorf("ner: prose's Maxent mapping %q points at weight %d of %d", entry, at, len(weights))
		}
		for li, l := range m.labels {
			if key, ok := strings.CutSuffix(entry, "-"+l); ok {
				byKey[key] = append(byKey[key], labelWeight{int32(li), weights[at]})
			}
		}
	}
	m.keys = make(map[string]weightSpan, len(byKey))
	for key, lw := range byKey {
		start := int32(len(m.weight))
		m.weight = append(m.weight, lw...)
		m.keys[key] = weightSpan{start, int32(len(m.weight))}
	}
	return nil
}

// classify labels each token as prose's entityExtracter.classify does: a
// token's features include the labels before it.
func (m *maxent) classify(toks []prose.Token) []string {
	labels := make([]string, len(toks))
	scores := make([]float64, len(m.labels))
	var key []byte
	var f [numFeatures]featureValue
	prevTag := "None"
	for i := range toks {
		m.features(&f, toks, i, prevTag)
		clear(scores)
		for k := range f {
			key = f[k].appendKey(append(append(key[:0], featureOrder[k]...), '-'))
			if s, ok := m.keys[string(key)]; ok {
				for _, lw := range m.weight[s.start:s.end] {
					scores[lw.label] += lw.w
				}
			}
		}
		labels[i], prevTag = "", "" // prose's label, and its simplePOS, when no score beats −Inf
		if best := argmax(scores); best >= 0 {
			labels[i], prevTag = m.labels[best], m.simple[best]
		}
	}
	return labels
}

// argmax is the first index of the largest score, or -1 if none exceeds
// −Inf (prose then labels the token "").
func argmax(scores []float64) int {
	best, bestScore := -1, math.Inf(-1)
	for i, s := range scores {
		if s > bestScore {
			best, bestScore = i, s
		}
	}
	return best
}

// featureValue is a feature's value: one string, or two joined by "+".
type featureValue struct {
	a, b   string
	joined bool
}

func one(a string) featureValue { return featureValue{a: a} }

func joined(a, b string) featureValue { return featureValue{a, b, true} }

func (v featureValue) appendKey(key []byte) []byte {
	key = append(key, v.a...)
	if v.joined {
		key = append(append(key, '+'), v.b...)
	}
	return key
}

// features fills f with prose's extract(i, toks, history), in
// featureOrder, prevTag being simplePOS of the previous token's label.
func (m *maxent) features(f *[numFeatures]featureValue, toks []prose.Token, i int, prevTag string) {
	word := toks[i].Text
	lower := strings.ToLower(word)
	prevWord, prevPos, prevShape := "None", "None", "None"
	if i == 0 {
		prevTag = "None"
	} else {
		prevWord, prevPos = strings.ToLower(toks[i-1].Text), toks[i-1].Tag
	}
	if i >= 2 { // prose leaves the previous shape "None" at i == 1
		prevShape = shape(toks[i-1].Text)
	}
	nextWord, nextPos := "None", "None"
	if i < len(toks)-1 {
		nextWord, nextPos = strings.ToLower(toks[i+1].Text), strings.ToLower(toks[i+1].Tag)
	}
	basic := "False"
	if m.basic[word] {
		basic = "True"
	}
	pos := toks[i].Tag
	*f = [numFeatures]featureValue{
		one("True"), one(basic), one(nextPos), one(nextWord), one(pos),
		joined(pos, prevTag), one(strings.ToLower(word[:min(len(word), 3)])),
		one(prevPos), one(prevTag), one(prevWord), one(shape(word)),
		joined(prevShape, prevTag), one(strings.ToLower(word[len(word)-min(len(word), 3):])),
		one(word), joined(lower, nextPos), one(lower), one(strconv.Itoa(len(word))),
	}
}

// shape is prose's shape(word) without its regular expressions: "number"
// if strconv.ParseFloat accepts it, "punct" if it ends in a rune outside
// [0-9A-Za-z_] (`\W+$`; an invalid byte decodes to U+FFFD, which is \W),
// else down-, up- (strings.Title) or mixed case; "other" if empty.
func shape(word string) string {
	switch {
	case word == "":
		return "other"
	case mayBeFloat(word) && isFloat(word):
		return "number"
	case !isWordByte(word[len(word)-1]):
		return "punct"
	case strings.ToLower(word) == word:
		return "downcase"
	case strings.Title(word) == word: //nolint:staticcheck // prose's feature is defined by strings.Title
		return "upcase"
	}
	return "mixedcase"
}

func isFloat(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// mayBeFloat rejects most words before ParseFloat, whose error allocates:
// a float starts, after a sign, with a digit, '.', or the i/n of inf/nan.
func mayBeFloat(s string) bool {
	if s[0] == '+' || s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	switch c := s[0]; {
	case c >= '0' && c <= '9', c == '.', c == 'i', c == 'I', c == 'n', c == 'N':
		return true
	}
	return false
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// simplePOS is prose's: "v" for a label starting with V, else the label
// up to its first "-".
func simplePOS(label string) string {
	if strings.HasPrefix(label, "V") {
		return "v"
	}
	head, _, _ := strings.Cut(label, "-")
	return head
}

// chunk is prose's entityExtracter.chunk: it groups labelled tokens into
// entities and returns each entity's tokens joined by spaces. A group
// still open at the end of the sentence is dropped, as prose drops it.
func chunk(toks []prose.Token, labels []string) []string {
	var out []string
	var parts []int
	end := ""
	for i, tok := range toks {
		label := labels[i]
		last := len(parts) - 1
		switch {
		case label != "O" && label != end,
			last >= 0 && tok.Tag == toks[parts[last]].Tag,
			last >= 0 && tok.Tag == "CD" && labels[parts[last]] != "O":
			end = strings.Replace(label, "B", "I", 1)
			parts = append(parts, i)
		case label == "O" && end != "", label == end:
			if label != "O" {
				parts = append(parts, i)
			}
			out = append(out, joinTokens(toks, parts))
			end, parts = "", parts[:0]
		}
	}
	return out
}

func joinTokens(toks []prose.Token, parts []int) string {
	var b strings.Builder
	for k, i := range parts {
		if k > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(toks[i].Text)
	}
	return b.String()
}
