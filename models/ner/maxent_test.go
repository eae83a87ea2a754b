package ner

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jdkato/prose/v2"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/corpus/synth"
)

// testSentences are the sentences of the demo corpus and of a small scale
// corpus (both generated), and sentences written for edge cases: numbers,
// hyphens, possessives, unicode, invalid UTF-8, one-token sentences.
func testSentences(t testing.TB) []string {
	t.Helper()
	seg, err := NewSegmenter()
	if err != nil {
		t.Fatal(err)
	}
	scale, err := synth.GenerateScale(synth.DefaultScale(300))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{
		"Dr. Anne O'Neil-Smith's 3rd book, \"The Long Road\", sold 1,000,000 copies in the U.S. in 1999.",
		"Paris", "1984", "-", ":)", "NaN and Inf are numbers to ParseFloat; so is 1e5 but not e5.",
		"São Paulo and Zürich hosted the Ünited Front of İstanbul in ŁÓDŹ.",
		"bad \xff\xfe bytes near Berlin \xc3", "The IBM-Microsoft deal, reported by Reuters, surprised Wall Street.",
		"He met John F. Kennedy Jr. at the White House on 22 November 1963 at 12:30.",
	}
	out = append(out, randomSentences(1500)...)
	for _, c := range [][]string{passageTexts(synth.Generate(synth.Options{People: 60, Cities: 12, Countries: 4, Bands: 15, Queries: 1})), passageTexts(scale)} {
		for _, text := range c {
			ss, err := seg.Split(text)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ss...)
		}
	}
	return out
}

// randomSentences strings capitalised and lower-case words, numbers,
// abbreviations and punctuation together with varied white space, so that
// labels, tags and prose's token sharing vary more than in generated prose.
func randomSentences(n int) []string {
	pieces := strings.Fields("John Smith Mary of the and in New York Bank Corp. Inc. U.S. Mr. Dr. " +
		"1999 12 3.5 million , . ( ) \" ' 's said went to River Valley University company river " +
		"IBM NASA X-ray well-known Jean-Luc Ünited señor O'Brien Paris France King Louis XIV on May 4 " +
		"’ “Rome” &rsquo; 'sa $5 (Paris) Hilton's they'll don't :) :-) (-_-) ಠ_ಠ -LRB- * user@example.com @gleaner https://x.org")
	gaps := []string{" ", " ", " ", "  ", "\t", "\n", " \u00a0", "\u2003"}
	rng := rand.New(rand.NewPCG(11, 13))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for k := range 1 + rng.IntN(16) {
			if k > 0 || rng.IntN(8) == 0 {
				b.WriteString(gaps[rng.IntN(len(gaps))])
			}
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		if rng.IntN(8) == 0 {
			b.WriteString(gaps[rng.IntN(len(gaps))])
		}
		out[i] = b.String()
	}
	return out
}

func passageTexts(c *corpus.Corpus) []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.Text)
	}
	return out
}

// proseRun is what prose's own pipeline, entity classifier included, made
// of one sentence.
type proseRun struct {
	sentence string
	tokens   []prose.Token
	entities []string // the entities' texts
}

var (
	referenceOnce sync.Once
	referenceRuns []proseRun
	referenceErr  error
)

// proseReference runs prose on the test sentences as the extractor gives
// them to prose's tokenizer (proseSafe), once per test binary.
func proseReference(t *testing.T) []proseRun {
	t.Helper()
	referenceOnce.Do(func() {
		referenceErr = errors.New("the test sentences could not be made") // until they are
		sentences := testSentences(t)
		referenceErr = nil
		if raceDetector {
			sentences = sentences[:1000]
		}
		doc, err := prose.NewDocument("Load the model.", prose.WithSegmentation(false))
		if referenceErr = err; err != nil {
			return
		}
		for _, s := range sentences {
			d, err := prose.NewDocument(proseSafe(s), prose.WithSegmentation(false), prose.UsingModel(doc.Model))
			if referenceErr = err; err != nil {
				return
			}
			run := proseRun{sentence: s, tokens: d.Tokens()}
			for _, e := range d.Entities() {
				run.entities = append(run.entities, e.Text)
			}
			referenceRuns = append(referenceRuns, run)
		}
	})
	if referenceErr != nil {
		t.Fatal(referenceErr)
	}
	return referenceRuns
}

// TestMaxentLabelsAsProse gives prose's tagged tokens to maxent.classify
// and expects prose's labels token by token, then prose's entities.
func TestMaxentLabelsAsProse(t *testing.T) {
	m, err := loadMaxent()
	if err != nil {
		t.Fatal(err)
	}
	runs := proseReference(t)
	tokens, entities := 0, 0
	for _, run := range runs {
		s, toks := run.sentence, run.tokens
		got := m.classify(toks)
		last, ok := lastAliases(s, len(toks))
		if !ok {
			t.Fatalf("%q: prose's spans do not add up to its %d tokens", s, len(toks))
		}
		aliasLabels(got, last)
		for i, tok := range toks {
			if got[i] != tok.Label {
				t.Fatalf("%q token %d %q (tag %s): label %q, prose %q", s, i, tok.Text, tok.Tag, got[i], tok.Label)
			}
		}
		if chunks := chunk(toks, got); !slices.Equal(chunks, run.entities) {
			t.Fatalf("%q: chunks %q, prose %q", s, chunks, run.entities)
		}
		tokens += len(toks)
		entities += len(run.entities)
	}
	// The check must have compared something that can differ.
	if len(runs) < 500 || entities < 300 {
		t.Fatalf("only %d sentences, %d tokens, %d entities compared", len(runs), tokens, entities)
	}
	t.Logf("%d sentences, %d tokens, %d entities as prose labels them", len(runs), tokens, entities)
}

// tieSentences compares the tagger's tags, shared as prose shares them,
// with prose's on the test sentences, and fails on a difference unless
// prose's tag ties the tagger's best score at that token (prose breaks ties
// in map order) or follows such a tie in its sentence (a token's features
// hold the tags before it). It returns the sentences with a tie.
func tieSentences(t *testing.T) map[string]bool {
	t.Helper()
	tg, err := loadTagger()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, run := range proseReference(t) {
		s, toks := run.sentence, run.tokens
		tied := map[int][]string{} // position → the classes tied at the top
		tags, err := tg.tagScored(toks, func(i int, scores []float64, touched []bool) {
			tied[i] = tg.tiedClasses(scores, touched)
		})
		if err != nil {
			t.Fatal(err)
		}
		last, ok := lastAliases(s, len(toks))
		if !ok {
			t.Fatalf("%q: prose's spans do not add up to its %d tokens", s, len(toks))
		}
		firstTie := len(toks)
		for i, tok := range toks {
			if p := last[i]; tags[p] != tok.Tag && slices.Contains(tied[p], tok.Tag) {
				firstTie = min(firstTie, p)
			}
		}
		for i, tok := range toks {
			switch p := last[i]; {
			case tags[p] == tok.Tag:
			case p >= firstTie:
				out[s] = true
				t.Logf("%q token %d %q: %s, prose %s (a tie at token %d)", s, i, tok.Text, tags[p], tok.Tag, firstTie)
			default:
				t.Errorf("%q token %d %q: %s, prose %s, tied %q", s, i, tok.Text, tags[p], tok.Tag, tied[p])
			}
		}
	}
	return out
}

// tiedClasses are the touched classes within 1e-9 (relative) of the best.
func (t *tagger) tiedClasses(scores []float64, touched []bool) []string {
	best := t.best(scores, touched)
	top := scores[slices.Index(t.classes, best)]
	var out []string
	for c, s := range scores {
		if touched[c] && math.Abs(s-top) <= 1e-9*max(1, math.Abs(top)) {
			out = append(out, t.classes[c])
		}
	}
	return out
}

// TestTaggerAsProse: tags differ from prose's only at its random ties.
func TestTaggerAsProse(t *testing.T) {
	ties := tieSentences(t)
	t.Logf("%d sentences with a tie prose broke otherwise", len(ties))
}

// TestProseEntitiesAsBefore checks the whole extractor against prose's
// pipeline with the same span post-processing: entities differ only in a
// sentence where the tagger broke a tie prose broke otherwise.
func TestProseEntitiesAsBefore(t *testing.T) {
	p, err := NewProse()
	if err != nil {
		t.Fatal(err)
	}
	ties := tieSentences(t)
	for _, run := range proseReference(t) {
		got, err := p.Entities(context.Background(), run.sentence)
		if err != nil {
			t.Fatal(err)
		}
		if want := spans(run.sentence, run.entities); !slices.Equal(got, want) && !ties[run.sentence] {
			t.Errorf("%q: %q, prose %q", run.sentence, got, want)
		}
	}
}

// TestProseOwnAsReference checks the fallback for sentences whose shared
// tokens cannot be told: prose's own classifier, loaded on first use.
func TestProseOwnAsReference(t *testing.T) {
	p, err := NewProse()
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range proseReference(t)[:200] {
		got, err := p.proseOwn(run.sentence)
		if err != nil {
			t.Fatal(err)
		}
		if want := spans(run.sentence, run.entities); !slices.Equal(got, want) {
			t.Fatalf("%q: %q, prose %q", run.sentence, got, want)
		}
	}
}

// TestFeaturesAsProseExtract checks the features of four tokens against
// the values prose's extract gives them (printed from a verbatim copy),
// including the previous shape left "None" at the second token.
func TestFeaturesAsProseExtract(t *testing.T) {
	m, err := loadMaxent()
	if err != nil {
		t.Fatal(err)
	}
	toks := []prose.Token{{Text: "King", Tag: "VBG"}, {Text: "on", Tag: "IN"}, {Text: "U.S.", Tag: "NNP"}, {Text: "(", Tag: "("}}
	prevTags := []string{"ignored", "O", "O", "B"}
	want := []string{
		"bias:True en-wordlist:False nextpos:in nextword:on pos:VBG pos+prevtag:VBG+None prefix3:kin prevpos:None prevtag:None prevword:None shape:upcase shape+prevtag:None+None suffix3:ing word:King word+nextpos:king+in word.lower:king wordlen:4",
		"bias:True en-wordlist:True nextpos:nnp nextword:u.s. pos:IN pos+prevtag:IN+O prefix3:on prevpos:VBG prevtag:O prevword:king shape:downcase shape+prevtag:None+O suffix3:on word:on word+nextpos:on+nnp word.lower:on wordlen:2",
		"bias:True en-wordlist:False nextpos:( nextword:( pos:NNP pos+prevtag:NNP+O prefix3:u.s prevpos:IN prevtag:O prevword:on shape:punct shape+prevtag:downcase+O suffix3:.s. word:U.S. word+nextpos:u.s.+( word.lower:u.s. wordlen:4",
		"bias:True en-wordlist:False nextpos:None nextword:None pos:( pos+prevtag:(+B prefix3:( prevpos:NNP prevtag:B prevword:u.s. shape:punct shape+prevtag:punct+B suffix3:( word:( word+nextpos:(+None word.lower:( wordlen:1",
	}
	for i := range toks {
		var f [numFeatures]featureValue
		m.features(&f, toks, i, prevTags[i])
		parts := make([]string, numFeatures)
		for k := range f {
			parts[k] = featureOrder[k] + ":" + string(f[k].appendKey(nil))
		}
		if got := strings.Join(parts, " "); got != want[i] {
			t.Errorf("token %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
}

// TestShapeAsProse compares shape with prose's regular-expression version
// on words of ASCII, unicode and invalid bytes.
func TestShapeAsProse(t *testing.T) {
	nonWord := regexp.MustCompile(`\W+$`)
	word := regexp.MustCompile(`\w+$`)
	reference := func(w string) string {
		switch {
		case isFloat(w):
			return "number"
		case nonWord.MatchString(w):
			return "punct"
		case word.MatchString(w):
			switch {
			case strings.ToLower(w) == w:
				return "downcase"
			case strings.Title(w) == w: //nolint:staticcheck // prose's definition
				return "upcase"
			}
			return "mixedcase"
		}
		return "other"
	}
	pieces := []string{"a", "B", "z", "Q", "_", "0", "9", ".", "-", "+", "e", "E", "i", "n", "f", "inf", "NaN", "x", "0x", "p",
		"é", "É", "ß", "İ", "\xff", "\xc3", "'", ",", " ", "1_0", "ǅ"}
	rng := rand.New(rand.NewPCG(3, 5))
	words := []string{"", "1", "-1.5e3", "+Inf", "infinity", "nan", "0x1p-2", ".5", "Hello", "HELLO", "hello!", "McDonald"}
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(5) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		words = append(words, b.String())
	}
	for _, w := range words {
		if got, want := shape(w), reference(w); got != want {
			t.Fatalf("shape(%q) = %s, prose's %s", w, got, want)
		}
	}
}

// BenchmarkProseEntities compares the extractor with prose's own
// classifier on the test sentences (one goroutine).
func BenchmarkProseEntities(b *testing.B) {
	sentences := testSentences(b)[:2000]
	p, err := NewProse()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("maxent", func(b *testing.B) {
		for i := range b.N {
			if _, err := p.Entities(ctx, sentences[i%len(sentences)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("prose", func(b *testing.B) {
		for i := range b.N {
			if _, err := p.proseOwn(sentences[i%len(sentences)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
