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

// Prose is the embedded NER: prose's averaged-perceptron tagger and entity
// chunker (PERSON, GPE, ORG, …; labels are not used). The model is loaded
// once per process (≈ 0.7 s) and shared; NexusRAG uses spans only.
type Prose struct {
	model *prose.Model
}

var (
	proseOnce  sync.Once
	proseModel *prose.Model
	proseErr   error
)

// NewProse returns the prose extractor, loading its model on first use.
func NewProse() (*Prose, error) {
	proseOnce.Do(func() {
		doc, err := newDocument("Load the model.", nil)
		if err != nil {
			proseErr = fmt.Errorf("ner: loading the prose model: %w", err)
			return
		}
		proseModel = doc.Model
	})
	if proseErr != nil {
		return nil, proseErr
	}
	return &Prose{model: proseModel}, nil
}

// newDocument runs prose without its sentence segmenter (gleaner segments
// once, with the Punkt model loaded once), recovering prose's panics.
func newDocument(text string, m *prose.Model) (doc *prose.Document, err error) {
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, fmt.Errorf("prose panicked: %v", r)
		}
	}()
	opts := []prose.DocOpt{prose.WithSegmentation(false)}
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
	doc, err := newDocument(sentence, p.model)
	if err != nil {
		return nil, fmt.Errorf("ner: prose on %q: %w", clip(sentence), err)
	}
	var out []string
	seen := map[string]bool{}
	for _, e := range doc.Entities() {
		span, ok := locate(sentence, strings.Fields(e.Text))
		if span = trimSpan(span); ok && keep(span) {
			out = appendDistinct(out, seen, span)
		}
	}
	return out, nil
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
// space, and returns the covering substring of s.
func locate(s string, toks []string) (string, bool) {
	if len(toks) == 0 {
		return "", false
	}
	for from := 0; from < len(s); {
		i := strings.Index(s[from:], toks[0])
		if i < 0 {
			return "", false
		}
		start := from + i
		if end, ok := matchRest(s, start+len(toks[0]), toks[1:]); ok {
			return s[start:end], true
		}
		from = start + 1
	}
	return "", false
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
