package graphops

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MentionOptions configures the mentions graph.
type MentionOptions struct {
	// MinTitleLen skips titles shorter than this many runes, ≥ 1 (gleaner's
	// CLI default is 4):
	// short titles ("US", "Art") match everywhere by accident.
	MinTitleLen int
	// MaxTitleHits drops a title mentioned by more passages than this: hub
	// titles that are also common phrases carry no signal. 0 means
	// max(50, 1% of the passages).
	MaxTitleHits int
}

// MentionEdges links passage A to passage B when A's text contains B's
// title as a whole word, case-sensitively (titles are proper names: "Paris"
// is not "paris"). Whole word means the runes around the match are not
// letters or digits. One Aho–Corasick pass over each text finds all titles
// at once; passages are scanned in parallel. A title shared by several
// passages links to all of them; self-links are dropped. Edges come sorted
// by (source, destination) with unit weight.
func MentionEdges(ctx context.Context, titles, texts []string, o MentionOptions) ([]Edge, error) {
	if len(titles) != len(texts) {
		return nil, fmt.Errorf("graphops: %d titles for %d texts", len(titles), len(texts))
	}
	if o.MinTitleLen < 1 || o.MaxTitleHits < 0 {
		return nil, fmt.Errorf("graphops: mentions: min title length must be ≥ 1 and max title hits ≥ 0 (0: automatic), got %d and %d", o.MinTitleLen, o.MaxTitleHits)
	}
	if o.MaxTitleHits == 0 { // documented: automatic
		o.MaxTitleHits = max(50, len(texts)/100)
	}
	patterns, owners := titlePatterns(titles, o.MinTitleLen)
	m := newMatcher(patterns)
	hits := make([][]int32, len(texts)) // distinct pattern ids per passage
	errc := make(chan error, 1)
	parallelFor(len(texts), func(i int) {
		if i%1024 == 0 && ctx.Err() != nil {
			select {
			case errc <- ctx.Err():
			default:
			}
			return
		}
		hits[i] = wholeWordHits(m, texts[i])
	})
	select {
	case err := <-errc:
		return nil, err
	default:
	}
	return mentionEdges(hits, owners, o.MaxTitleHits), nil
}

// titlePatterns returns the distinct usable titles and, per pattern, the
// passages carrying that title.
func titlePatterns(titles []string, minLen int) ([]string, [][]int32) {
	index := map[string]int{}
	var patterns []string
	var owners [][]int32
	for i, t := range titles {
		t = strings.TrimSpace(t)
		if utf8.RuneCountInString(t) < minLen {
			continue
		}
		id, ok := index[t]
		if !ok {
			id = len(patterns)
			index[t] = id
			patterns, owners = append(patterns, t), append(owners, nil)
		}
		owners[id] = append(owners[id], int32(i))
	}
	return patterns, owners
}

func wholeWordHits(m *matcher, text string) []int32 {
	seen := map[int32]bool{}
	var out []int32
	m.scan(text, func(id int32, start, end int) {
		if seen[id] || !boundary(text, start, end) {
			return
		}
		seen[id] = true
		out = append(out, id)
	})
	return out
}

// boundary reports whether text[start:end] is delimited by non-word runes.
func boundary(text string, start, end int) bool {
	if start > 0 {
		if r, _ := utf8.DecodeLastRuneInString(text[:start]); isWord(r) {
			return false
		}
	}
	if end < len(text) {
		if r, _ := utf8.DecodeRuneInString(text[end:]); isWord(r) {
			return false
		}
	}
	return true
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func mentionEdges(hits [][]int32, owners [][]int32, maxHits int) []Edge {
	count := make([]int, len(owners))
	for _, hs := range hits {
		for _, id := range hs {
			count[id]++
		}
	}
	var es []Edge
	for src, hs := range hits {
		for _, id := range hs {
			if count[id] > maxHits {
				continue
			}
			for _, dst := range owners[id] {
				if int(dst) != src {
					es = append(es, Edge{Src: int32(src), Dst: dst, W: 1})
				}
			}
		}
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].Src != es[j].Src {
			return es[i].Src < es[j].Src
		}
		return es[i].Dst < es[j].Dst
	})
	return dedupEdges(es)
}

func dedupEdges(es []Edge) []Edge {
	out := es[:0]
	for i, e := range es {
		if i == 0 || e.Src != es[i-1].Src || e.Dst != es[i-1].Dst {
			out = append(out, e)
		}
	}
	return out
}
