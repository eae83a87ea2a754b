package ner

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jdkato/prose/v2"
	"github.com/mingrammer/commonregex"
)

// tagger is prose's averaged-perceptron part-of-speech tagger, read from
// the model prose embeds. prose builds a map of 14 feature strings per
// token and sums their class weights in map order, so a tie (weights are
// rounded to three decimals) went to a random class: two runs over 200k
// tokens disagreed on 4. Here the features are summed in one fixed order
// and a tie goes to the first class in the model's order, so tags are
// reproducible; the test bounds the disagreement with prose.
//
// A tagger is read-only after loading and safe for concurrent use.
type tagger struct {
	classes []string
	known   map[string]string     // prose's tagMap: words with one tag
	keys    map[string]weightSpan // feature → its class weights in weight
	weight  []labelWeight
}

// loadTagger decodes prose's AveragedPerceptron assets.
func loadTagger() (*tagger, error) {
	var classes []string
	var known map[string]string
	var weights map[string]map[string]float64
	for _, a := range []struct {
		name string
		into any
	}{{"classes", &classes}, {"tags", &known}, {"weights", &weights}} {
		if err := decodeAsset("model/AveragedPerceptron/"+a.name+".gob", a.into); err != nil {
			return nil, err
		}
	}
	t := &tagger{classes: classes, known: known, keys: make(map[string]weightSpan, len(weights))}
	at := map[string]int32{}
	for i, c := range classes {
		at[c] = int32(i)
	}
	for _, c := range onlyInWeights(weights, at) { // sorted, so ties stay repeatable
		at[c] = int32(len(t.classes))
		t.classes = append(t.classes, c)
	}
	for feat, byClass := range weights {
		start := int32(len(t.weight))
		for _, c := range slices.Sorted(maps.Keys(byClass)) {
			t.weight = append(t.weight, labelWeight{at[c], byClass[c]})
		}
		t.keys[feat] = weightSpan{start, int32(len(t.weight))}
	}
	return t, nil
}

// onlyInWeights lists, sorted, the classes the weights name that known
// does not hold.
func onlyInWeights(weights map[string]map[string]float64, known map[string]int32) []string {
	extra := map[string]bool{}
	for _, byClass := range weights {
		for c := range byClass {
			if _, ok := known[c]; !ok {
				extra[c] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(extra))
}

// prose's patterns for tokens tagged without the model.
var (
	noneTag = regexp.MustCompile(`^(?:0|\*[\w?]\*|\*\-\d{1,3}|\*[A-Z]+\*\-\d{1,3}|\*)$`)
	keepTag = regexp.MustCompile(`^\-[A-Z]{3}\-$`)
)

// emoticons is prose v2.0.0's list (tokenize.go), tagged SYM;
// TestEmoticonsAreProses checks each entry against prose's tokenizer.
var emoticons = map[string]bool{}

func init() {
	for _, e := range []string{"(-8", "(-;", "(-_-)", "(._.)", "(:", "(=", "(o:", "(¬_¬)", "(ಠ_ಠ)", "(╯°□°）╯︵┻━┻", "-__-", "8-)", "8-D", "8D", ":(", ":((", ":(((", ":()", ":)))", ":-)", ":-))", ":-)))", ":-*", ":-/", ":-X", ":-]", ":-o", ":-p", ":-x", ":-|", ":-}", ":0", ":3", ":P", ":]", ":`(", ":`)", ":`-(", ":o", ":o)", "=(", "=)", "=D", "=|", "@_@", "O.o", "O_o", "V_V", "XDD", "[-:", "^___^", "o_0", "o_O", "o_o", "v_v", "xD", "xDD", "¯\\(ツ)/¯"} {
		emoticons[e] = true
	}
}

// tag returns prose's tag for each token, the rules of its tag() first and
// the model for the rest; a token's features include the tags before it.
func (t *tagger) tag(toks []prose.Token) ([]string, error) {
	return t.tagScored(toks, nil)
}

// tagScored is tag, calling seen (if not nil) with the scores of each
// token the model tags.
func (t *tagger) tagScored(toks []prose.Token, seen func(i int, scores []float64, touched []bool)) ([]string, error) {
	ctx := make([]string, len(toks)+4)
	ctx[0], ctx[1] = "-START-", "-START2-"
	for i, tok := range toks {
		ctx[i+2] = normalize(tok.Text)
	}
	ctx[len(ctx)-2], ctx[len(ctx)-1] = "-END-", "-END2-"
	tags := make([]string, len(toks))
	scores := make([]float64, len(t.classes))
	touched := make([]bool, len(t.classes))
	var key []byte
	p1, p2 := "-START-", "-START2-"
	for i, tok := range toks {
		w := tok.Text
		if w == "" {
			return nil, fmt.Errorf("ner: prose made an empty token %d", i)
		}
		tag, ruled := ruleTag(w)
		if !ruled {
			var found bool
			if tag, found = t.known[w]; !found {
				clear(scores)
				clear(touched)
				for _, f := range tagFeatures(ctx, i+2, w, p1, p2) {
					key = f.appendKey(key[:0])
					if s, ok := t.keys[string(key)]; ok {
						for _, cw := range t.weight[s.start:s.end] {
							scores[cw.label] += cw.w
							touched[cw.label] = true
						}
					}
				}
				tag = t.best(scores, touched)
				if seen != nil {
					seen(i, scores, touched)
				}
			}
		}
		tags[i] = tag
		p1, p2 = tag, p1
	}
	return tags, nil
}

// ruleTag is prose's tag() before the model: a hyphen, an emoticon, a
// link, an e-mail address or @handle, an empty-element marker, -XXX-.
func ruleTag(w string) (string, bool) {
	switch {
	case w == "-":
		return "-", true
	case emoticons[w]:
		return "SYM", true
	case commonregex.LinkRegex.MatchString(w) || commonregex.EmailRegex.MatchString(w) || strings.HasPrefix(w, "@"):
		return "NN", true
	case noneTag.MatchString(w):
		return "-NONE-", true
	case keepTag.MatchString(w):
		return w, true
	}
	return "", false
}

// best is the first class of the highest score among those some feature
// weighted, or "" if none was (prose's max over its map of scores).
func (t *tagger) best(scores []float64, touched []bool) string {
	best := -1
	for c, s := range scores {
		if touched[c] && (best < 0 || s > scores[best]) {
			best = c
		}
	}
	if best < 0 {
		return ""
	}
	return t.classes[best]
}

// tagKey is one of prose's featurize keys: n parts joined by spaces.
type tagKey struct {
	p [3]string
	n int
}

func key1(a string) tagKey       { return tagKey{[3]string{a}, 1} }
func key2(a, b string) tagKey    { return tagKey{[3]string{a, b}, 2} }
func key3(a, b, c string) tagKey { return tagKey{[3]string{a, b, c}, 3} }

func (k tagKey) appendKey(b []byte) []byte {
	for i, p := range k.p[:k.n] {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, p...)
	}
	return b
}

// tagFeatures are prose's featurize(i, ctx, w, p1, p2) keys; i indexes
// ctx, which has two pads before the tokens. string(w[0]) is prose's: it
// converts the byte as a rune.
func tagFeatures(ctx []string, i int, w, p1, p2 string) [14]tagKey {
	suffix := func(s string) string { return s[len(s)-min(len(s), 3):] }
	return [14]tagKey{
		key1("bias"),
		key2("i suffix", suffix(w)),
		key2("i pref1", string(rune(w[0]))),
		key2("i-1 tag", p1),
		key2("i-2 tag", p2),
		key3("i tag+i-2 tag", p1, p2),
		key2("i word", ctx[i]),
		key3("i-1 tag+i word", p1, ctx[i]),
		key2("i-1 word", ctx[i-1]),
		key2("i-1 suffix", suffix(ctx[i-1])),
		key2("i-2 word", ctx[i-2]),
		key2("i+1 word", ctx[i+1]),
		key2("i+1 suffix", suffix(ctx[i+1])),
		key2("i+2 word", ctx[i+2]),
	}
}

func isInt(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// normalize is prose's: hyphenated words, four-digit numbers and words
// starting with a digit become classes; the rest is lower-cased.
func normalize(word string) string {
	if word == "" {
		return word
	}
	// prose's first is string(word[0]): a one-byte string only if ASCII,
	// and Atoi accepts it only if it is a digit. Atoi of the word is tried
	// only at length 4, as its error allocates.
	if strings.Contains(word, "-") && word[0] != '-' {
		return "!HYPHEN"
	} else if len(word) == 4 && isInt(word) {
		return "!YEAR"
	} else if word[0] >= '0' && word[0] <= '9' {
		return "!DIGITS"
	}
	return strings.ToLower(word)
}
