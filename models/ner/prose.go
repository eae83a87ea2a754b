package ner

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/jdkato/prose/v2"
)

// Prose is the embedded NER: github.com/jdkato/prose/v2's tokenizer, then
// its averaged-perceptron tagger (tagger.go), maxent entity classifier and
// chunker (maxent.go; PERSON, GPE, ORG, …, labels not used), both read
// from prose's embedded model and indexed for speed. The models are loaded
// once per process (≈ 1 s) and shared; NexusRAG uses spans only.
type Prose struct {
	tagger *tagger
	maxent *maxent
}

var (
	proseOnce   sync.Once
	proseTagger *tagger
	proseMaxent *maxent
	proseErr    error
)

// NewProse returns the prose extractor, loading its models on first use.
func NewProse() (*Prose, error) {
	proseOnce.Do(func() {
		if proseTagger, proseErr = loadTagger(); proseErr == nil {
			proseMaxent, proseErr = loadMaxent()
		}
	})
	if proseErr != nil {
		return nil, proseErr
	}
	return &Prose{tagger: proseTagger, maxent: proseMaxent}, nil
}

// tokens runs prose's tokenizer alone.
func tokens(text string) ([]prose.Token, error) {
	doc, err := proseDocument(text, nil, prose.WithTagging(false), prose.WithExtraction(false))
	if err != nil {
		return nil, err
	}
	return doc.Tokens(), nil
}

// proseDocument runs prose without its sentence segmenter (gleaner
// segments once, with the Punkt model loaded once), recovering prose's
// panics. A nil model makes prose load the one opts need.
func proseDocument(text string, m *prose.Model, opts ...prose.DocOpt) (doc *prose.Document, err error) {
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, fmt.Errorf("prose panicked: %v", r)
		}
	}()
	opts = append(opts, prose.WithSegmentation(false))
	if m != nil {
		opts = append(opts, prose.UsingModel(m))
	}
	return prose.NewDocument(text, opts...)
}

// Name implements EntityExtractor.
func (*Prose) Name() string { return "prose" }

// Entities implements EntityExtractor. prose joins an entity's tokens with
// spaces; each is located in the sentence so the surface string is the
// sentence's own text, and a span that cannot be located is dropped.
func (p *Prose) Entities(ctx context.Context, sentence string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	text := proseSafe(withoutCostlyRuns(sentence))
	toks, err := tokens(text)
	if err != nil {
		return nil, fmt.Errorf("ner: prose on %q: %w", clip(sentence), err)
	}
	last, ok := lastAliases(text, len(toks))
	if !ok {
		return p.proseOwn(sentence)
	}
	tags, err := p.tagger.tag(toks)
	if err != nil {
		return nil, fmt.Errorf("ner: on %q: %w", clip(sentence), err)
	}
	aliasLabels(tags, last)
	for i := range toks {
		toks[i].Tag = tags[i]
	}
	labels := p.maxent.classify(toks)
	aliasLabels(labels, last)
	return spans(sentence, chunk(toks, labels)), nil
}

var (
	fullOnce  sync.Once
	fullModel *prose.Model
	fullErr   error
)

// proseOwn runs prose's own entity classifier, loading its model on first
// use. It is exact where lastAliases cannot tell which tokens prose shared.
func (p *Prose) proseOwn(sentence string) ([]string, error) {
	fullOnce.Do(func() {
		doc, err := proseDocument("Load the model.", nil)
		if err != nil {
			fullErr = fmt.Errorf("ner: loading the prose model: %w", err)
			return
		}
		fullModel = doc.Model
	})
	if fullErr != nil {
		return nil, fullErr
	}
	doc, err := proseDocument(proseSafe(withoutCostlyRuns(sentence)), fullModel)
	if err != nil {
		return nil, fmt.Errorf("ner: prose on %q: %w", clip(sentence), err)
	}
	var chunks []string
	for _, e := range doc.Entities() {
		chunks = append(chunks, e.Text)
	}
	return spans(sentence, chunks), nil
}

// maxRun is the longest run without white space the NER reads, and
// maxEdge the most characters it lets prose strip from either edge of a
// run. prose's tokenizer strips a run's edge punctuation one character at
// a time, rescanning the run each time: a run of n such characters costs
// O(n²), a 1 MiB question of ")" would take hours, and 64 KiB of distinct
// 256-byte runs of ")" took 0.3 s. No entity is that long (a URL, a hash
// or a data URI is), and no passage of 2Wiki or the scale corpus has a
// run with more than 6 edge characters.
const (
	maxRun  = 256
	maxEdge = 16
)

// withoutCostlyRuns is s with every run without white space that is
// longer than maxRun bytes, or from which prose would strip more than
// maxEdge characters on one edge (edgeHeavy), replaced by a space (s
// itself if it has none).
func withoutCostlyRuns(s string) string {
	var b strings.Builder
	kept, start := 0, -1 // s[:kept] is in b; the current run starts at start
	cut := func(end int) {
		if start >= 0 && (end-start > maxRun || edgeHeavy(s[start:end])) {
			b.WriteString(s[kept:start])
			b.WriteByte(' ')
			kept = end
		}
		start = -1
	}
	for i, r := range s {
		if !unicode.IsSpace(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		cut(i)
	}
	cut(len(s))
	if kept == 0 {
		return s
	}
	b.WriteString(s[kept:])
	return b.String()
}

// edgeHeavy reports whether prose's tokenizer would strip more than
// maxEdge characters from the start of run (its prefixes $ ( " [) or from
// its end (its suffixes , ) " ] ! ; . ? : '), in the spelling its
// sanitizer gives curly quotes and "&rsquo;". prose strips the prefixes
// first, then splits once at a contraction ('s, 'll, 're, 'm, n't)
// anywhere in what is left and stops there, so such a run keeps its
// suffixes. It may report a run prose would stop on sooner (an emoticon,
// an abbreviation, the last character), which is then not read.
func edgeHeavy(run string) bool {
	lead, rest := 0, run
	for ; lead <= maxEdge; lead++ {
		r, n := utf8.DecodeRuneInString(rest)
		if n == 0 || !strings.ContainsRune(`$("[“”`, r) {
			break
		}
		rest = rest[n:]
	}
	if lead > maxEdge {
		return true
	}
	trail := 0
	for end := rest; trail <= maxEdge; trail++ {
		if strings.HasSuffix(end, "&rsquo;") {
			end = end[:len(end)-len("&rsquo;")]
			continue
		}
		r, n := utf8.DecodeLastRuneInString(end)
		if n == 0 || !strings.ContainsRune(`,)"]!;.?:'“”‘’`, r) {
			break
		}
		end = end[:len(end)-n]
	}
	return trail > maxEdge && !hasContraction(rest)
}

// hasContraction reports whether prose would split rest at a contraction
// (its hasAnyIndex on the lowercased word, which must be longer than the
// contraction).
func hasContraction(rest string) bool {
	low := strings.ToLower(proseSanitizer.Replace(rest))
	for _, c := range []string{"'ll", "'s", "'re", "'m", "n't"} {
		if len(low) > len(c) && strings.Contains(low, c) {
			return true
		}
	}
	return false
}

// proseSafe is s with the runes prose's tokenizer cannot cut replaced:
// it finds "'s", "n't", … in the lower-cased word and cuts the word itself
// there, which is out of range, or inside a rune, where lower-casing
// changes the word's length (Ⱥ, an invalid byte, which becomes U+FFFD;
// İ, ẞ). Such a rune becomes proseRune's, an invalid byte U+FFFD (spans
// maps a token holding one back to the sentence's own text). s itself if
// it has none.
func proseSafe(s string) string {
	var b strings.Builder
	kept := 0 // s[:kept] is in b
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		safe := proseRune(r) // an invalid byte decodes as U+FFFD, written in full
		if safe != r || r == utf8.RuneError && n == 1 {
			b.WriteString(s[kept:i])
			b.WriteRune(safe)
			kept = i + n
		}
		i += n
	}
	if kept == 0 {
		return s
	}
	b.WriteString(s[kept:])
	return b.String()
}

// proseRune is r as prose's tokenizer can cut it: a rune whose lower
// case takes more bytes becomes that lower case (Ⱥ → ⱥ), and one whose
// lower case takes fewer (İ, ẞ, K, Ω, Å) becomes X, or x if not upper
// case, so the word keeps its shape for the tagger; others are r.
func proseRune(r rune) rune {
	if r < utf8.RuneSelf {
		return r
	}
	switch l := unicode.ToLower(r); {
	case utf8.RuneLen(l) > utf8.RuneLen(r):
		return l
	case utf8.RuneLen(l) < utf8.RuneLen(r) && unicode.IsUpper(r):
		return 'X'
	case utf8.RuneLen(l) < utf8.RuneLen(r):
		return 'x'
	}
	return r
}

// spans locates each chunk (tokens joined by spaces) in the sentence and
// returns the distinct kept surface strings, in order. prose's tokens
// spell curly quotes straight ("O’Brien" → "O'Brien") and carry
// proseSafe's replacements, so they are located in that spelling of the
// sentence and the sentence's own text is returned.
func spans(sentence string, chunks []string) []string {
	var out []string
	seen := map[string]bool{}
	view, at := proseView(sentence)
	for _, c := range chunks {
		start, end, ok := locate(view, strings.Fields(c))
		if !ok {
			continue
		}
		if at != nil {
			start, end = at[start], at[end]
		}
		if span := trimSpan(sentence[start:end]); keep(span) {
			out = appendDistinct(out, seen, span)
		}
	}
	return out
}

// proseQuotes are prose's tokenizer's replacements (its sanitizer).
var proseQuotes = map[rune]byte{'\u201c': '"', '\u201d': '"', '\u2018': '\'', '\u2019': '\''}

// proseView is s as prose's tokens spell it (proseSafe's replacements,
// then prose's quotes, "&rsquo;" included) and, when that differs from
// s, the offset in s of each of its bytes and of its end; nil when equal.
func proseView(s string) (string, []int) {
	var b strings.Builder
	var at []int
	kept := 0 // s[:kept] is in b
	put := func(i, n int, text string) {
		if at == nil {
			at = make([]int, 0, len(s)+1)
		}
		for j := kept; j < i; j++ {
			at = append(at, j)
		}
		b.WriteString(s[kept:i])
		b.WriteString(text)
		for range len(text) {
			at = append(at, i)
		}
		kept = i + n
	}
	for i := 0; i < len(s); {
		if s[i] == '&' && strings.HasPrefix(s[i:], "&rsquo;") {
			put(i, len("&rsquo;"), "'")
			i += len("&rsquo;")
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if q, ok := proseQuotes[r]; ok {
			put(i, n, string(q))
		} else if safe := proseRune(r); safe != r || r == utf8.RuneError && n == 1 {
			put(i, n, string(safe))
		}
		i += n
	}
	if at == nil {
		return s, nil
	}
	for j := kept; j <= len(s); j++ {
		at = append(at, j)
	}
	b.WriteString(s[kept:])
	return b.String(), at
}

// trimSpan strips punctuation prose's tokenizer leaves on an entity's
// edges ("Teutberga(" in "Teutberga( died 875)"), keeping a closing
// parenthesis the span opened.
func trimSpan(s string) string {
	const edge = "()[]{}\"“”«»,;:!?'’‘"
	s = strings.TrimLeft(s, edge)
	for len(s) > 0 {
		r, n := utf8.DecodeLastRuneInString(s)
		if !strings.ContainsRune(edge, r) || (r == ')' && strings.Count(s, "(") >= strings.Count(s, ")")) {
			break
		}
		s = s[:len(s)-n]
	}
	return strings.TrimSpace(s)
}

// locate finds the tokens in s, in order, separated by nothing or by white
// space, and returns the covering substring's bounds.
func locate(s string, toks []string) (int, int, bool) {
	if len(toks) == 0 {
		return 0, 0, false
	}
	for from := 0; from < len(s); {
		i := strings.Index(s[from:], toks[0])
		if i < 0 {
			return 0, 0, false
		}
		start := from + i
		if end, ok := matchRest(s, start+len(toks[0]), toks[1:]); ok {
			return start, end, true
		}
		from = start + 1
	}
	return 0, 0, false
}

// matchRest matches toks at s[at:], each after optional white space, and
// returns the end of the last.
func matchRest(s string, at int, toks []string) (int, bool) {
	for _, t := range toks {
		for at < len(s) {
			r, n := utf8.DecodeRuneInString(s[at:])
			if !unicode.IsSpace(r) {
				break
			}
			at += n
		}
		if !strings.HasPrefix(s[at:], t) {
			return 0, false
		}
		at += len(t)
	}
	return at, true
}

// clip shortens text for error messages.
func clip(s string) string {
	if len(s) <= 60 {
		return s
	}
	cut := 60
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
