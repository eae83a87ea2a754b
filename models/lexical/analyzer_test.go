package lexical

import (
	"reflect"
	"strings"
	"testing"
)

func TestAnalyze(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"The cats are running quickly", []string{"cat", "run", "quickli"}},
		{"Aretha Franklin's song", []string{"aretha", "franklin", "song"}},
		{"don't stop, 3.5 mg/kg", []string{"don't", "stop", "3.5", "mg", "kg"}},
		{"NAÏVE Café", []string{"naïv", "café"}},
		{"東京タワー", []string{"東", "京", "タ", "ワ", "ー"}},
		{"", nil},
		{"the of and", nil},
	}
	for _, c := range cases {
		got := Analyze(c.in)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Analyze(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestStopwordsFit(t *testing.T) {
	for w := range stopwords {
		if len(w) > stopwordMax || strings.IndexFunc(w, func(r rune) bool { return r >= 0x80 }) >= 0 {
			t.Errorf("stopword %q is longer than %d bytes or not ASCII: isStopRunes would miss it", w, stopwordMax)
		}
		if !isStopRunes([]rune(w)) {
			t.Errorf("isStopRunes(%q) = false", w)
		}
	}
}
