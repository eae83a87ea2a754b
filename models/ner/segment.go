package ner

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"gopkg.in/neurosnap/sentences.v1"
	"gopkg.in/neurosnap/sentences.v1/english"
)

// Segmenter splits text into sentences with the Punkt model prose uses
// (github.com/neurosnap/sentences, English), loaded once per process: prose
// reloads it on every document, which costs more than the NER itself.
type Segmenter struct {
	tok *sentences.DefaultSentenceTokenizer
}

var (
	segOnce sync.Once
	seg     *Segmenter
	segErr  error
)

// NewSegmenter returns the shared English segmenter.
func NewSegmenter() (*Segmenter, error) {
	segOnce.Do(func() {
		t, err := english.NewSentenceTokenizer(nil)
		if err != nil {
			segErr = fmt.Errorf("ner: loading the Punkt sentence model: %w", err)
			return
		}
		seg = &Segmenter{tok: t}
	})
	return seg, segErr
}

// Split returns the non-empty sentences of text, trimmed of surrounding
// space, in order.
func (s *Segmenter) Split(text string) (out []string, err error) {
	defer func() {
		if r := recover(); r != nil { // a dependency's panic stays at the package edge
			out, err = nil, fmt.Errorf("ner: sentence segmentation failed: %v", r)
		}
	}()
	for _, t := range s.tok.Tokenize(text) {
		if st := strings.TrimSpace(t.Text); st != "" {
			out = append(out, st)
		}
	}
	return out, nil
}

// Sentence is one sentence of a text with the distinct entities found in
// it, in order of first appearance.
type Sentence struct {
	Text     string
	Entities []string
}

// Extract segments text into sentences (a title line joins the sentence
// after it, as a parser that reads "\n" as space would have it) and runs
// ex over each line of each sentence, so no entity spans a line break.
func Extract(ctx context.Context, seg *Segmenter, ex EntityExtractor, text string) ([]Sentence, error) {
	sents, err := seg.Split(text)
	if err != nil {
		return nil, err
	}
	out := make([]Sentence, 0, len(sents))
	for _, s := range sents {
		var ents []string
		seen := map[string]bool{}
		for _, line := range strings.Split(s, "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			es, err := ex.Entities(ctx, line)
			if err != nil {
				return nil, err
			}
			for _, e := range es {
				ents = appendDistinct(ents, seen, e)
			}
		}
		out = append(out, Sentence{Text: s, Entities: ents})
	}
	return out, nil
}
