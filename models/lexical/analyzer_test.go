package lexical

import (
	"reflect"
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
