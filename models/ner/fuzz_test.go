package ner

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzProseEntities: any sentence (questions are user text) gives
// entities without an error or a panic, each a span of the sentence, and
// the same entities as prose's own pipeline where prose itself does not
// fail.
func FuzzProseEntities(f *testing.F) {
	for _, s := range []string{
		"Yesterday John O’Brien visited Dublin.",
		"The “New York Times” praised Mary O‘Neill &rsquo;s work.",
		"The ȺȺȺ's board met Ⱦom in \xffParis.",
		"Who directed ((((Casablanca)))) in 1942?",
		"U.S. troops left the U.S. base :-) @handle http://x.org",
		"He studied İsmet İnönü's government in Ankara.",
		"Yesterday İİ😀's board met John Smith; ẞn't Kelvin's Ω's.",
	} {
		f.Add(s)
	}
	p, err := NewProse()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 2000 {
			return
		}
		got, err := p.Entities(context.Background(), s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		for _, e := range got {
			if !strings.Contains(s, e) || utf8.ValidString(s) && !utf8.ValidString(e) {
				t.Fatalf("%q: entity %q is not a span of the sentence, or cuts a rune", s, e)
			}
		}
		want, err := p.proseOwn(s)
		if err == nil && strings.Join(want, "\x00") != strings.Join(got, "\x00") && !p.hasTie(s) {
			t.Fatalf("%q: entities %q; prose's own %q", s, got, want)
		}
	})
}

// hasTie reports whether the tagger's best tag ties another class at a
// token of s: prose breaks such ties at random.
func (p *Prose) hasTie(s string) bool {
	toks, err := tokens(proseSafe(withoutCostlyRuns(s)))
	if err != nil {
		return true
	}
	tie := false
	_, err = p.tagger.tagScored(toks, func(_ int, scores []float64, touched []bool) {
		tie = tie || len(p.tagger.tiedClasses(scores, touched)) > 1
	})
	return tie || err != nil
}
