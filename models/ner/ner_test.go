package ner

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestKeepDropsNumbersAndFunctionWords(t *testing.T) {
	for span, want := range map[string]bool{
		"1997": false, "3,000": false, "11 November": true, "Which": false, "The": false,
		"The Beatles": true, "Tennessee": true, "": false, " ": false, "of the": false,
	} {
		if keep(span) != want {
			t.Errorf("keep(%q) = %v, want %v", span, !want, want)
		}
	}
}

func TestLocateReturnsTheSentencesOwnText(t *testing.T) {
	s := "Born in Memphis,  Tennessee\nshe moved to New York."
	for _, tc := range []struct {
		toks []string
		want string
		ok   bool
	}{
		{[]string{"Memphis"}, "Memphis", true},
		{[]string{"Tennessee", "she"}, "Tennessee\nshe", true},
		{[]string{"New", "York"}, "New York", true},
		{[]string{"York", "New"}, "", false},
		{nil, "", false},
	} {
		start, end, ok := locate(s, tc.toks)
		if got := s[start:end]; got != tc.want || ok != tc.ok {
			t.Errorf("locate(%q) = %q, %v; want %q, %v", tc.toks, got, ok, tc.want, tc.ok)
		}
	}
}

// TestProseKeepsCurlyQuotedEntities: prose spells curly quotes straight
// (and "&rsquo;" too); the entity is its span of the sentence, as written.
func TestProseKeepsCurlyQuotedEntities(t *testing.T) {
	p, err := NewProse()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ sentence, want string }{
		{"Yesterday John O\u2019Brien visited Dublin.", "John O\u2019Brien"},
		{"Yesterday John O&rsquo;Brien visited Dublin.", "John O&rsquo;Brien"},
		{"Yesterday John O'Brien visited Dublin.", "John O'Brien"},
		{"The \u201cNew York Times\u201d praised Mary O\u2018Neill.", "Mary O\u2018Neill"},
		{"The \u023a\u023a\u023a\u2019s board met Mary O\u2019Neill in Paris.", "Mary O\u2019Neill"},
	} {
		got, err := p.Entities(context.Background(), tc.sentence)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(got, tc.want) {
			t.Errorf("%q: entities %q; want %q among them", tc.sentence, got, tc.want)
		}
	}
}

// TestProseViewMapsBack: each byte of the view maps to the sentence byte
// it came from, and the view's bounds to the sentence's.
func TestProseViewMapsBack(t *testing.T) {
	s := "a\u2019b &rsquo;c \u201cd\u201d \u023ae \xffz"
	view, at := proseView(s)
	if want := "a'b 'c \"d\" \u2c65e \ufffdz"; view != want {
		t.Fatalf("view %q; want %q", view, want)
	}
	if len(at) != len(view)+1 || at[0] != 0 || at[len(view)] != len(s) {
		t.Fatalf("offsets %v for %d view bytes, %d sentence bytes", at, len(view), len(s))
	}
	for _, tok := range []string{"a'b", "'c", "\"d\"", "\u2c65e", "\ufffdz"} {
		start, end, ok := locate(view, []string{tok})
		if !ok {
			t.Fatalf("%q not in the view", tok)
		}
		if got := s[at[start]:at[end]]; utf8.ValidString(tok) && got == "" {
			t.Fatalf("%q maps to nothing", tok)
		}
	}
	if v, at := proseView("plain text"); v != "plain text" || at != nil {
		t.Fatalf("plain text: %q, %v", v, at)
	}
	start, end, _ := locate(view, []string{"'c"})
	if got := s[at[start]:at[end]]; got != "&rsquo;c" {
		t.Fatalf("'c maps to %q", got)
	}
}

func TestGazetteerLongestLeftmostWholeWords(t *testing.T) {
	g := NewGazetteer([]string{"New York", "New York City", "York", "Art", "1999", "Yo"}, DefaultMinTitleLen)
	got, err := g.Entities(context.Background(), "From New York City to York, by Artemis in 1999.")
	if err != nil {
		t.Fatal(err)
	}
	// "New York" lies inside the longer match; "Art" is inside a word;
	// "1999" has no letter; "Yo" is shorter than 4 runes.
	if want := []string{"New York City", "York"}; !slices.Equal(got, want) {
		t.Fatalf("entities = %q, want %q", got, want)
	}
}

func TestSegmenterSplitsSentences(t *testing.T) {
	seg, err := NewSegmenter()
	if err != nil {
		t.Fatal(err)
	}
	got, err := seg.Split("Mr. Smith went to Washington. He arrived on Monday.  ")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "Mr. Smith") || got[1] != "He arrived on Monday." {
		t.Fatalf("sentences = %q", got)
	}
}

// TestProseFindsNamesDeterministically runs the embedded model on a
// sentence written for this test, from several goroutines (go test -race
// checks the shared model is only read), and expects the same spans each
// time.
func TestProseFindsNamesDeterministically(t *testing.T) {
	p, err := NewProse()
	if err != nil {
		t.Fatal(err)
	}
	const s = "Margaret Holloway founded the Brightwater Company in Chicago before moving to Paris."
	first, err := p.Entities(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Margaret Holloway", "Chicago", "Paris"} {
		if !slices.Contains(first, want) {
			t.Errorf("prose found %q, missing %q", first, want)
		}
	}
	for _, e := range first {
		if !strings.Contains(s, e) || !keep(e) {
			t.Errorf("entity %q is not a kept substring of the sentence", e)
		}
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := p.Entities(context.Background(), s)
			if err != nil || !slices.Equal(got, first) {
				t.Errorf("run %d: %q, %v; first run %q", i, got, err, first)
			}
		}()
	}
	wg.Wait()
}

func TestUnionAndNew(t *testing.T) {
	g1 := NewGazetteer([]string{"Chicago"}, 4)
	g2 := NewGazetteer([]string{"Paris", "Chicago"}, 4)
	got, err := Union{g1, g2}.Entities(context.Background(), "Paris and Chicago")
	if err != nil || !slices.Equal(got, []string{"Chicago", "Paris"}) {
		t.Fatalf("union = %q, %v", got, err)
	}
	if _, err := New("spacy", nil); err == nil || !strings.Contains(err.Error(), "prose") {
		t.Fatalf("unknown extractor: %v", err)
	}
	if e, err := New("titles", []string{"Chicago"}); err != nil || e.Name() != "titles" {
		t.Fatalf("titles: %v %v", e, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g1.Entities(ctx, "Chicago"); err == nil {
		t.Fatal("cancelled context ignored")
	}
}

type stubExtractor []string

func (stubExtractor) Name() string { return "stub" }
func (s stubExtractor) Entities(context.Context, string) ([]string, error) {
	return s, nil
}

// EntitiesByOrigin gives Union's entities in Union's order, marking those
// only a Gazetteer part found.
func TestEntitiesByOrigin(t *testing.T) {
	g := NewGazetteer([]string{"grinpo zaltun", "Ann Lee"}, DefaultMinTitleLen)
	u := Union{stubExtractor{"Ann Lee", "Oslo"}, g}
	line := "Ann Lee met grinpo zaltun in Oslo."
	want, err := u.Entities(context.Background(), line)
	if err != nil {
		t.Fatal(err)
	}
	got, titleOnly, err := EntitiesByOrigin(context.Background(), u, line)
	if err != nil || !slices.Equal(got, want) || !slices.Equal(titleOnly, []bool{false, false, true}) {
		t.Fatalf("%v %v %v, want %v with only grinpo zaltun title-only", got, titleOnly, err, want)
	}
	if _, only, _ := EntitiesByOrigin(context.Background(), g, line); !slices.Equal(only, []bool{true, true}) {
		t.Fatalf("a gazetteer alone: %v", only)
	}
	if _, only, _ := EntitiesByOrigin(context.Background(), stubExtractor{"Oslo"}, line); !slices.Equal(only, []bool{false}) {
		t.Fatalf("another extractor: %v", only)
	}
}

// TestLongRunsAreLeftOut: runs over maxRun bytes without white space, or
// with over maxEdge characters of edge punctuation, are not read, so
// prose's tokenizer, quadratic in a run of punctuation, stays fast on a
// 1 MiB run (hours if it were read).
func TestLongRunsAreLeftOut(t *testing.T) {
	long := strings.Repeat(")", maxRun+1)
	for in, want := range map[string]string{
		"a b":                              "a b",
		strings.Repeat("x", maxRun) + " y": strings.Repeat("x", maxRun) + " y",
		"Paris " + long + " London":        "Paris   London",
		long:                               " ",
		long + "\t" + long + " z":          " \t  z",
		"“" + strings.Repeat("é", maxRun) + "”": " ",
		// edge punctuation: up to maxEdge characters on a side are read, one more is not
		"(" + strings.Repeat("$", maxEdge-1) + "x" + strings.Repeat(")", maxEdge):              "(" + strings.Repeat("$", maxEdge-1) + "x" + strings.Repeat(")", maxEdge),
		"a " + strings.Repeat("[", maxEdge+1) + "x b":                                          "a   b",
		"a x" + strings.Repeat(".", maxEdge+1) + " b":                                          "a   b",
		"a x" + strings.Repeat("&rsquo;", maxEdge/2) + strings.Repeat("’", maxEdge/2+1) + " b": "a   b",
		"a x" + strings.Repeat("&rsquo;", maxEdge) + " b":                                      "a x" + strings.Repeat("&rsquo;", maxEdge) + " b",
		"a " + strings.Repeat("“", maxEdge+1) + "x b":                                          "a   b",
		// prose splits once at a contraction and keeps the suffixes
		"a Smith’S" + strings.Repeat(".", 40) + " b": "a Smith’S" + strings.Repeat(".", 40) + " b",
		"a don't" + strings.Repeat("!", 40) + " b":   "a don't" + strings.Repeat("!", 40) + " b",
		"a x" + strings.Repeat(")x", 40) + " b":      "a x" + strings.Repeat(")x", 40) + " b", // inside, not on the edge
	} {
		if got := withoutCostlyRuns(in); got != want {
			t.Errorf("withoutCostlyRuns(%.20q…) = %.40q, want %.40q", in, got, want)
		}
	}
	p, err := NewProse()
	if err != nil {
		t.Fatal(err)
	}
	s := "Margaret Holloway founded the Brightwater Company in " + strings.Repeat(")", 1<<20) + " Chicago."
	got, err := p.Entities(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, "Margaret Holloway") || !slices.Contains(got, "Chicago") {
		t.Errorf("entities %q", got)
	}
}

// TestProseSafe: words whose lower case is longer or shorter (Ⱥ, an
// invalid byte; İ, ẞ) made prose's tokenizer cut out of range or inside a
// rune, failing a whole Tri-Graph build or cutting an entity in half; they
// are replaced, and no rune is left whose lower case changes its length.
func TestProseSafe(t *testing.T) {
	if got := proseSafe("Plain text, é and I."); got != "Plain text, é and I." {
		t.Errorf("proseSafe changed plain text: %q", got)
	}
	if got, want := proseSafe("aȺ\xffbİẞ"), "aⱥ\uFFFDbXX"; got != want {
		t.Errorf("proseSafe = %q, want %q", got, want)
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		if s := string(proseRune(r)); len(strings.ToLower(s)) != len(s) {
			t.Fatalf("%U: lower case of %q is %d bytes, not %d", r, s, len(strings.ToLower(s)), len(s))
		}
	}
	p, err := NewProse()
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string][]string{
		"The ȺȺȺ's board met Alice Carter in Paris.":     {"Paris"},
		"Who is \xc3\xc3n't here with Alice Carter now?": {"Alice Carter"},
		"Yesterday İİ😀's board met John Smith in Paris.": {"John Smith", "Paris"},
		"He studied İsmet İnönü's government in Ankara.": {"Ankara"},
	} {
		got, err := p.Entities(context.Background(), s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("%q: entities %q, missing %q", s, got, w)
			}
		}
	}
}
