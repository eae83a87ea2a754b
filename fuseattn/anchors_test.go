package fuseattn

import (
	"slices"
	"strings"
	"testing"
)

// words counts white-space separated words: a stand-in tokenizer whose
// counts are easy to reason about.
type words struct{}

func (words) Count(s string) int { return len(strings.Fields(s)) }

func TestSplitClauses(t *testing.T) {
	got := SplitClauses("Alice Smith was born in Paris in 1950, and she moved to Rome later on. She died; it rained! Short, list, of, words?  ", 4)
	want := []string{"Alice Smith was born in Paris in 1950,", "and she moved to Rome later on.", "She died;", "it rained!", "Short, list, of, words?"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if got := SplitClauses("Alice Smith was born in Paris in 1950, and she moved to Rome later on.", 100); len(got) != 1 {
		t.Fatalf("a large minimum must keep the sentence whole: %q", got)
	}
}

func TestAnchorsScoreDedupLinkAndBudget(t *testing.T) {
	ps := []Passage{
		{Title: "Alice Smith", Text: "Alice Smith was a painter born in Paris. She painted rivers. Alice Smith was a painter born in Paris."},
		{Title: "Paris", Text: "Paris is the capital of France. Bob Jones married Alice Smith in 1970."},
	}
	o := AnchorOptions{Budget: 100, LinkWeight: 0.5, MinClauseWords: 4}
	set, err := Anchors("Where was the painter Alice Smith born?", ps, o, words{})
	if err != nil {
		t.Fatal(err)
	}
	// Clauses with a positive score: the painter sentence (alic, smith,
	// painter, born = 4, + 0.5 for the link to "Paris"), the capital
	// sentence (0 overlap, but it names "Paris", its own title: no link),
	// and the marriage sentence (alic, smith = 2, + 0.5 for "Alice Smith").
	if set.Candidates != 2 {
		t.Fatalf("want 2 scored distinct clauses, got %d: %+v", set.Candidates, set.Chosen)
	}
	if set.Score != 7 || len(set.Chosen) != 2 || set.Chosen[0].Score != 4.5 {
		t.Fatalf("unexpected anchors %+v", set)
	}
	o.Budget = 8 // the painter sentence has 8 words, the marriage one 6
	if set, _ = Anchors("Where was the painter Alice Smith born?", ps, o, words{}); len(set.Chosen) != 1 || set.Chosen[0].Passage != 0 || set.Tokens > 8 {
		t.Fatalf("budget 8 must keep the painter sentence only: %+v", set)
	}
	o.Titles = true
	if set, _ = Anchors("Where was the painter Alice Smith born?", ps, o, words{}); len(set.Chosen) != 1 || !strings.HasPrefix(set.Text, "Paris: Bob") {
		t.Fatalf("with titles counted, only the titled marriage sentence (8 words) fits: %+v", set)
	}
	for _, bad := range []AnchorOptions{{Budget: 0, MinClauseWords: 1}, {Budget: 8, LinkWeight: -1, MinClauseWords: 1}, {Budget: 8}} {
		if _, err := Anchors("q", ps, bad, words{}); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	if _, err := Anchors("q", ps, o, nil); err == nil {
		t.Error("no token counter: no error")
	}
}
