package lexical

import (
	"slices"
	"testing"
)

// Expected tokens are NLTK word_tokenize's for the same sentences.
func TestTreebankWords(t *testing.T) {
	cases := map[string][]string{
		`Good muffins cost $3.88 in New York.`:      {"Good", "muffins", "cost", "$", "3.88", "in", "New", "York", "."},
		`They'll save and invest more.`:             {"They", "'ll", "save", "and", "invest", "more", "."},
		`Hi, I can't say "hello" (or 1,000 times)!`: {"Hi", ",", "I", "ca", "n't", "say", "``", "hello", "''", "(", "or", "1,000", "times", ")", "!"},
		`Edward's father: a writer.`:                {"Edward", "'s", "father", ":", "a", "writer", "."},
	}
	for in, want := range cases {
		if got := TreebankWords(in); !slices.Equal(got, want) {
			t.Errorf("TreebankWords(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsKeyword(t *testing.T) {
	for tok, want := range map[string]bool{"the": false, "The": true, ",": false, "``": true, "''": true, "'s": true, "Goldsmith": true, "()": false, "!?": true, "don't": false} {
		if IsKeyword(tok) != want {
			t.Errorf("IsKeyword(%q) = %v", tok, !want)
		}
	}
	if len(nltkStopwords) != 179 {
		t.Fatalf("%d stop words, NLTK's English list has 179", len(nltkStopwords))
	}
}
