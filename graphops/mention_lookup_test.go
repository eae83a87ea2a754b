package graphops

import (
	"github.com/gleaner-rag/gleaner/internal/strtab"
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
	t.Run("hashed", func(t *testing.T) { patternIndexFindsWhatAScanFinds(t, nil) })
	// words of one hash share their lists: more patterns are tried, the
	// same found
	t.Run("colliding", func(t *testing.T) {
		patternIndexFindsWhatAScanFinds(t, func(w string) uint64 { return uint64(len(w) % 3) })
	})
}

func patternIndexFindsWhatAScanFinds(t *testing.T, hash func(string) uint64) {
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
	pats := map[int32]string{}
	x := newPatternIndex(func(v int32) string { return pats[v] })
	if hash != nil {
		x.hash = hash
	}
	live := map[string]int32{}
	var free []int32 // numbers given back, given again
	for round := range 400 {
		for range 3 {
			if p := pattern(); live[p] == 0 {
				v := strtab.Take(&free, len(live)) + 1 // 0 is "not live"
				live[p], pats[v] = v, p
				x.add(v)
			}
		}
		if round%3 == 0 && len(live) > 0 {
			for p, v := range live { // one at random (map order)
				delete(live, p)
				x.remove(v)
				free = append(free, v-1)
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
		var got []string
		for _, v := range x.hits(text) {
			got = append(got, pats[v])
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d, text %q:\n got %q\nwant %q", round, text, got, want)
		}
	}
	for _, v := range live {
		x.remove(v)
	}
	if len(x.first) != 0 || len(x.next) != 0 || len(x.noWord) != 0 {
		t.Fatalf("after removing every pattern: %d first words, %d pairs, %d without a word", len(x.first), len(x.next), len(x.noWord))
	}
}
