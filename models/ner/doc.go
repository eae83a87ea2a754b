// Package ner finds the named entities of text for the Tri-Graph methods
// (NexusRAG, LinearRAG; docs/methods.md §2): a sentence segmenter and
// EntityExtractors that return, per sentence, the distinct entity surface
// strings it mentions.
//
// Extractors: Prose (the embedded default: github.com/jdkato/prose/v2's
// tokenizer, then its averaged-perceptron tagger and maxent entity model,
// read from prose's embedded files and run here about ten times faster and
// deterministically; models loaded once), Gazetteer (the corpus's
// titles and aliases, one Aho–Corasick pass) and Union (both). Every
// extractor drops spans without a letter (the papers drop spaCy's ORDINAL
// and CARDINAL labels) and returns substrings of the sentence, so counting
// an entity in its passage finds it.
//
// Extractors and the Segmenter are safe for concurrent use.
package ner

import (
	"context"
	"fmt"
	"strings"
	"unicode"
)

// EntityExtractor finds entities in one sentence.
type EntityExtractor interface {
	// Name identifies the extractor (prose, titles, both); the index records it.
	Name() string
	// Entities returns the distinct entity surface strings of sentence, in
	// order of first appearance, each a substring of sentence.
	Entities(ctx context.Context, sentence string) ([]string, error)
}

// Names lists the extractors New builds.
func Names() []string { return []string{"prose", "titles", "both"} }

// New builds the extractor called name; titles are the gazetteer's
// patterns (titles and aliases) for "titles" and "both".
func New(name string, titles []string) (EntityExtractor, error) {
	switch name {
	case "prose":
		return NewProse()
	case "titles":
		return NewGazetteer(titles, DefaultMinTitleLen), nil
	case "both":
		p, err := NewProse()
		if err != nil {
			return nil, err
		}
		return Union{p, NewGazetteer(titles, DefaultMinTitleLen)}, nil
	}
	return nil, fmt.Errorf("ner: extractor %q: want one of %s", name, strings.Join(Names(), ", "))
}

// keep reports whether a span is an entity worth a node: it has a letter
// (purely numeric spans — dates, counts — are dropped, as the papers drop
// ORDINAL and CARDINAL) and a word that is not a function word (prose
// tags a capitalised sentence-initial "Which" or "The" as an entity).
func keep(span string) bool {
	if strings.IndexFunc(span, unicode.IsLetter) < 0 {
		return false
	}
	for _, w := range strings.FieldsFunc(span, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !functionWords[strings.ToLower(w)] {
			return true
		}
	}
	return false
}

// functionWords are English words that never make an entity on their own.
var functionWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or but nor of in on at to for from by with without about as into onto
		which who whom whose what when where why how whether that this these those there here it its
		is are was were be been being do does did has have had not no yes if then than so such
		he she they we you i me him her them us my your his their our one ones`) {
		m[w] = true
	}
	return m
}()

// appendDistinct appends s to out unless seen, and marks it seen.
func appendDistinct(out []string, seen map[string]bool, s string) []string {
	if seen[s] {
		return out
	}
	seen[s] = true
	return append(out, s)
}

// Union merges the entities of several extractors (first extractor's order
// first, duplicates dropped).
type Union []EntityExtractor

// Name implements EntityExtractor.
func (u Union) Name() string {
	names := make([]string, len(u))
	for i, e := range u {
		names[i] = e.Name()
	}
	if len(names) == 2 && names[0] == "prose" && names[1] == "titles" {
		return "both"
	}
	return strings.Join(names, "+")
}

// EntitiesByOrigin is ex.Entities(sentence) with, for each entity,
// whether only a title gazetteer found it: a Gazetteer, or only the
// Gazetteer parts of a Union. Such an entity exists because some node has
// that title, so a view of the corpus without that node drops it.
func EntitiesByOrigin(ctx context.Context, ex EntityExtractor, sentence string) ([]string, []bool, error) {
	parts, ok := ex.(Union)
	if !ok {
		parts = Union{ex}
	}
	var out []string
	seen, other := map[string]bool{}, map[string]bool{}
	for _, e := range parts {
		ents, err := e.Entities(ctx, sentence)
		if err != nil {
			return nil, nil, err
		}
		_, gazetteer := e.(*Gazetteer)
		for _, s := range ents {
			other[s] = other[s] || !gazetteer
			out = appendDistinct(out, seen, s)
		}
	}
	titleOnly := make([]bool, len(out))
	for i, s := range out {
		titleOnly[i] = !other[s]
	}
	return out, titleOnly, nil
}

// Entities implements EntityExtractor.
func (u Union) Entities(ctx context.Context, sentence string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, e := range u {
		ents, err := e.Entities(ctx, sentence)
		if err != nil {
			return nil, err
		}
		for _, s := range ents {
			out = appendDistinct(out, seen, s)
		}
	}
	return out, nil
}
