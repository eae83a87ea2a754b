package ner

import (
	"math"
	"slices"
	"testing"

	"github.com/jdkato/prose/v2"
)

// TestTagFeaturesAsProse checks featurize's keys and normalize's classes
// against values read off prose's code, where a token's first byte is
// converted as a rune (É's first byte 0xC3 becomes "Ã").
func TestTagFeaturesAsProse(t *testing.T) {
	words := []string{"Émile", "met", "Ørsted-Hansen", "in", "1999"}
	ctx := []string{"-START-", "-START2-"}
	for _, w := range words {
		ctx = append(ctx, normalize(w))
	}
	ctx = append(ctx, "-END-", "-END2-")
	if want := []string{"-START-", "-START2-", "émile", "met", "!HYPHEN", "in", "!YEAR", "-END-", "-END2-"}; !slices.Equal(ctx, want) {
		t.Fatalf("context %q, want %q", ctx, want)
	}
	var got []string
	for _, k := range tagFeatures(ctx, 2, words[0], "-START-", "-START2-") {
		got = append(got, string(k.appendKey(nil)))
	}
	want := []string{"bias", "i suffix ile", "i pref1 Ã", "i-1 tag -START-", "i-2 tag -START2-",
		"i tag+i-2 tag -START- -START2-", "i word émile", "i-1 tag+i word -START- émile",
		"i-1 word -START2-", "i-1 suffix T2-", "i-2 word -START-", "i+1 word met", "i+1 suffix met",
		"i+2 word !HYPHEN"}
	if !slices.Equal(got, want) {
		t.Fatalf("keys\n%q\nwant\n%q", got, want)
	}
	for w, want := range map[string]string{"12": "!DIGITS", "12345": "!DIGITS", "-12": "-12", "+123": "!YEAR",
		"-123": "!YEAR", "x-y": "!HYPHEN", "-x": "-x", "ABC": "abc", "": ""} {
		if got := normalize(w); got != want {
			t.Errorf("normalize(%q) = %q, want %q", w, got, want)
		}
	}
}

// tagged runs prose's tokenizer and tagger, loading a tagger-only model.
func tagged(s string) (*prose.Document, error) {
	return proseDocument(s, nil, prose.WithExtraction(false))
}

// TestEmoticonsAreProses checks the copied list: prose keeps each one a
// single token and tags it SYM.
func TestEmoticonsAreProses(t *testing.T) {
	model, err := tagged("Load the tagger.")
	if err != nil {
		t.Fatal(err)
	}
	for e := range emoticons {
		doc, err := proseDocument(e, model.Model, prose.WithExtraction(false))
		if err != nil {
			t.Fatal(err)
		}
		if toks := doc.Tokens(); len(toks) != 1 || toks[0].Tag != "SYM" {
			t.Errorf("prose makes %q into %v, not one SYM token", e, toks)
		}
	}
}

// TestTiesGoToTheFirstClass: the tagger's and the classifier's argmax take
// the first of equal scores, and the tagger only classes a feature weighed.
func TestTiesGoToTheFirstClass(t *testing.T) {
	tg := &tagger{classes: []string{"A", "B", "C"}}
	all := []bool{true, true, true}
	for _, c := range []struct {
		scores  []float64
		touched []bool
		want    string
	}{
		{[]float64{1, 2, 2}, all, "B"},
		{[]float64{1, 2, 2}, []bool{true, false, true}, "C"},
		{[]float64{5, -1, -1}, []bool{false, true, true}, "B"},
		{[]float64{0, 0, 0}, []bool{false, false, false}, ""},
	} {
		if got := tg.best(c.scores, c.touched); got != c.want {
			t.Errorf("best(%v, %v) = %q, want %q", c.scores, c.touched, got, c.want)
		}
	}
	if got := argmax([]float64{1, 3, 3, 2}); got != 1 {
		t.Errorf("argmax = %d, want 1", got)
	}
	if got := argmax([]float64{math.Inf(-1), math.NaN()}); got != -1 {
		t.Errorf("argmax of nothing above −Inf = %d, want -1", got)
	}
}

// TestLastAliases: repeats of a span share tokens, pointing at the last
// cached repeat; the sentence's final span is never shared; counts that do
// not add up are refused.
func TestLastAliases(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want []int
	}{
		{"a b a c", 4, []int{2, 1, 2, 3}},
		{"x, y x, z x,", 8, []int{3, 4, 2, 3, 4, 5, 6, 7}}, // "x," is two tokens; the last "x," is the final span
		{"a b a c ", 4, []int{2, 1, 2, 3}},
		{"a b c", 3, []int{0, 1, 2}},
		{"a b a c", 3, nil},
		{"a b a c", 5, nil},
	} {
		got, ok := lastAliases(c.s, c.n)
		if !slices.Equal(got, c.want) || ok != (c.want != nil) {
			t.Errorf("lastAliases(%q, %d) = %v, %v; want %v", c.s, c.n, got, ok, c.want)
		}
	}
}
