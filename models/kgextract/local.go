package kgextract

import (
	"context"

	"github.com/gleaner-rag/gleaner/models/ner"
)

// Local extracts without a model server: entities are the NER spans of
// each sentence (type "ENTITY", the sentence as description) and every
// pair of entities in one sentence is a relationship of weight 1 described
// by that sentence. Co-occurrence has no direction, so a pair's source is
// the one whose normalised name sorts first: the same pair merges however
// the NER ordered it.
type Local struct {
	seg *ner.Segmenter
	ner ner.EntityExtractor
}

// NewLocal builds the local extractor over an entity extractor (nil:
// prose's NER, loaded once per process).
func NewLocal(ex ner.EntityExtractor) (*Local, error) {
	seg, err := ner.NewSegmenter()
	if err != nil {
		return nil, err
	}
	if ex == nil {
		if ex, err = ner.NewProse(); err != nil {
			return nil, err
		}
	}
	return &Local{seg: seg, ner: ex}, nil
}

// Name implements Extractor.
func (l *Local) Name() string { return "local:" + l.ner.Name() }

// Extract implements Extractor; its Usage is zero.
func (l *Local) Extract(ctx context.Context, text string) (Graph, Usage, error) {
	sents, err := ner.Extract(ctx, l.seg, l.ner, text)
	if err != nil {
		return Graph{}, Usage{}, err
	}
	var g Graph
	for _, s := range sents {
		for i, a := range s.Entities {
			g.Entities = append(g.Entities, Entity{Name: a, Type: "ENTITY", Description: s.Text})
			for _, b := range s.Entities[i+1:] {
				src, dst := a, b
				switch na, nb := NormalizeName(a), NormalizeName(b); {
				case na == nb:
					continue
				case nb < na:
					src, dst = b, a
				}
				g.Relationships = append(g.Relationships, Relationship{Source: src, Target: dst, Description: s.Text, Weight: 1})
			}
		}
	}
	return g, Usage{}, nil
}
