package ner

import (
	"context"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/gleaner-rag/gleaner/graphops"
)

// DefaultMinTitleLen is the shortest title the gazetteer matches, in runes
// (as the mentions graph: shorter titles match too much by accident).
const DefaultMinTitleLen = 4

// Gazetteer finds the corpus's titles and aliases in a sentence as whole
// words, case-sensitively, in one Aho–Corasick pass. Where matches overlap,
// the longest leftmost one wins ("New York City" over "New York").
type Gazetteer struct {
	m        *graphops.Matcher
	patterns []string
}

// NewGazetteer builds the matcher over the distinct titles of at least
// minLen runes that keep (have a letter). The titles are copied, so they
// may alias memory the caller releases (a closed index's mapping).
func NewGazetteer(titles []string, minLen int) *Gazetteer {
	var pats []string
	seen := map[string]bool{}
	for _, t := range titles {
		if utf8.RuneCountInString(t) >= minLen && keep(t) && !seen[t] {
			pats = appendDistinct(pats, seen, strings.Clone(t))
		}
	}
	return &Gazetteer{m: graphops.NewMatcher(pats), patterns: pats}
}

// Name implements EntityExtractor.
func (*Gazetteer) Name() string { return "titles" }

type span struct{ start, end int }

// Entities implements EntityExtractor.
func (g *Gazetteer) Entities(ctx context.Context, sentence string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var hits []span
	g.m.Scan(sentence, func(_ int32, start, end int) {
		if graphops.IsWholeWord(sentence, start, end) {
			hits = append(hits, span{start, end})
		}
	})
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].start != hits[j].start {
			return hits[i].start < hits[j].start
		}
		return hits[i].end > hits[j].end
	})
	var out []string
	seen := map[string]bool{}
	last := -1
	for _, h := range hits {
		if h.start < last {
			continue // inside a longer, earlier match
		}
		out = appendDistinct(out, seen, sentence[h.start:h.end])
		last = h.end
	}
	return out, nil
}
