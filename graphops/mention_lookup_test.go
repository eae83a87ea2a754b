package graphops

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestPatternIndexFindsWhatAScanFinds: the index's hits equal a scan of
// every pattern (holdsWord) on random texts, as patterns come and go:
// patterns led by punctuation, of one word or several, without a word,
// sharing first and second words, non-ASCII.
func TestPatternIndexFindsWhatAScanFinds(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	vocab := []string{"The", "the", "John", "Smith", "Smithson", "Band", "Élodie", "Łódź", "42", "St", "Louis", "A", "of", "Paris", "X9"}
	seps := []string{" ", " ", " ", ", ", ". ", "-", " (", ") ", "'s ", "\n", "  "}
	phrase := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(seps[rng.IntN(len(seps))])
			}
			b.WriteString(vocab[rng.IntN(len(vocab))])
		}
		return b.String()
	}
	pattern := func() string {
		switch rng.IntN(8) {
		case 0:
			return "(" + phrase(1+rng.IntN(2)) // led by punctuation
		case 1:
			return "\"" + phrase(1+rng.IntN(2)) + "\""
		case 2:
			return "...!" // no word at all
		default:
			return phrase(1 + rng.IntN(3))
		}
	}
	x := newPatternIndex()
	live := map[string]bool{}
	for round := range 400 {
		for range 3 {
			if p := pattern(); !live[p] {
				live[p] = true
				x.add(p)
			}
		}
		if round%3 == 0 && len(live) > 0 {
			for p := range live { // one at random (map order)
				delete(live, p)
				x.remove(p)
				break
			}
		}
		text := phrase(5 + rng.IntN(20))
		if rng.IntN(4) == 0 {
			text = "x" + text + "...!" // a word glued before the first
		}
		var want []string
		for p := range live {
			if holdsWord(text, p) {
				want = append(want, p)
			}
		}
		got := x.hits(text)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d, text %q:\n got %q\nwant %q", round, text, got, want)
		}
	}
	for p := range live {
		x.remove(p)
	}
	if len(x.byFirst) != 0 || len(x.noWord) != 0 {
		t.Fatalf("after removing every pattern: %d first words, %d without a word", len(x.byFirst), len(x.noWord))
	}
}
