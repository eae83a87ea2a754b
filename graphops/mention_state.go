package graphops

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gleaner-rag/gleaner/internal/parallel"
)

// Mentions keeps what MentionEdges derives, by passage key (a stable id,
// not a number: numbers change as passages come and go), so the edges
// follow added and removed passages without rescanning every text: an
// added passage's text is scanned for every title, and a new title is
// looked for only in the passages whose text holds its rarest word (an
// index of the words that do not start lower-case; a title with none is
// looked for everywhere). Edges equals MentionEdges over the same titles
// and texts. A Mentions is not safe for concurrent use.
type Mentions struct {
	o        MentionOptions
	patterns map[string]*mentionPattern
	hits     map[string][]string // passage → patterns its text holds
	owns     map[string]string   // passage → the pattern it carries as title
	// index finds the patterns a text holds.
	index patternIndex
	// words indexes the texts' words that do not start lower-case, for
	// new titles.
	words wordIndex
	// What changed since the edges were last made (Edges, Rows): the
	// hit limit they were made with (0: never made), the passages whose
	// edges may differ, and the patterns whose owners or hitters changed,
	// each with whether it gave edges then.
	lastMax int
	dirty   map[string]bool
	touched map[string]*touch
	// popular indexes the patterns held by more than minHits passages by
	// how many: when the hit limit moves, only those between its old and
	// new value can start or stop giving edges.
	popular map[int]map[string]bool
}

// minHits is the least automatic hit limit (maxHits).
const minHits = 50

// hitBy records that key's text holds pattern p (or no longer does).
func (s *Mentions) hitBy(p, key string, holds bool) {
	e := s.patterns[p]
	from := len(e.hitBy)
	if holds {
		e.hitBy[key] = true
	} else {
		delete(e.hitBy, key)
	}
	to := len(e.hitBy)
	if from == to {
		return
	}
	if m := s.popular[from]; from > minHits {
		delete(m, p)
		if len(m) == 0 {
			delete(s.popular, from)
		}
	}
	if to > minHits {
		if s.popular[to] == nil {
			s.popular[to] = map[string]bool{}
		}
		s.popular[to][p] = true
	}
}

type touch struct{ was, owners bool }

type mentionPattern struct {
	owners map[string]bool // passages carrying it as title
	hitBy  map[string]bool // passages whose text holds it
}

// NewMentions starts an empty state; o as MentionEdges takes it.
func NewMentions(o MentionOptions) (*Mentions, error) {
	if o.MinTitleLen < 1 || o.MaxTitleHits < 0 {
		return nil, fmt.Errorf("graphops: mentions: min title length must be ≥ 1 and max title hits ≥ 0 (0: automatic), got %d and %d", o.MinTitleLen, o.MaxTitleHits)
	}
	return &Mentions{o: o, patterns: map[string]*mentionPattern{}, hits: map[string][]string{}, owns: map[string]string{},
		index: newPatternIndex(), words: newWordIndex(),
		dirty: map[string]bool{}, touched: map[string]*touch{}, popular: map[int]map[string]bool{}}, nil
}

// Passage is one passage as mentions see it: its key, the title it
// carries ("" when none: only a document's first passage carries the
// document's title) and its text.
type Passage struct {
	Key, Title, Text string
}

// pattern is the usable pattern of a title ("" when too short).
func (s *Mentions) pattern(title string) string {
	t := strings.TrimSpace(title)
	if utf8.RuneCountInString(t) < s.o.MinTitleLen {
		return ""
	}
	return t
}

func (s *Mentions) entry(p string) *mentionPattern {
	e, ok := s.patterns[p]
	if !ok {
		e = &mentionPattern{owners: map[string]bool{}, hitBy: map[string]bool{}}
		s.patterns[p] = e
		s.index.add(p)
	}
	return e
}

// firstWord is p's leading run of letters and digits.
func firstWord(p string) string {
	end := 0
	for end < len(p) {
		r, size := utf8.DecodeRuneInString(p[end:])
		if !isWord(r) {
			break
		}
		end += size
	}
	return p[:end]
}

// Remove forgets passages (unknown keys are ignored).
func (s *Mentions) Remove(keys ...string) {
	for _, k := range keys {
		for _, p := range s.hits[k] {
			s.touch(p, false)
			s.hitBy(p, k, false)
			s.drop(p)
		}
		delete(s.hits, k)
		s.words.remove(k)
		if p, ok := s.owns[k]; ok {
			s.touch(p, true)
			delete(s.patterns[p].owners, k)
			delete(s.owns, k)
			s.drop(p)
		}
	}
}

// drop forgets a pattern nobody carries or mentions.
func (s *Mentions) drop(p string) {
	if e := s.patterns[p]; len(e.owners) == 0 && len(e.hitBy) == 0 {
		delete(s.patterns, p)
		s.index.remove(p)
	}
}

// Add adds passages (keys new to the state); text returns a known
// passage's text (a new title is checked in the passages holding its
// first word). ctx only paces the work (parallel.Yield): stopping midway
// would leave the state half-followed.
func (s *Mentions) Add(ctx context.Context, ps []Passage, text func(key string) string) {
	var fresh []string
	for _, p := range ps {
		pat := s.pattern(p.Title)
		if pat == "" {
			continue
		}
		if _, ok := s.patterns[pat]; !ok {
			fresh = append(fresh, pat)
		}
		s.touch(pat, true)
		s.entry(pat).owners[p.Key] = true
		s.owns[p.Key] = pat
	}
	added := make(map[string]bool, len(ps))
	for _, p := range ps {
		added[p.Key] = true
	}
	for _, pat := range fresh {
		s.findOld(ctx, pat, added, text)
	}
	for _, p := range ps {
		s.setHits(p.Key, s.textHits(p.Text))
		s.words.add(p.Key, p.Text)
		parallel.Yield(ctx)
	}
}

// eachWord calls fn with each word of text (a run of letters and digits,
// as the whole-word rule cuts them) and its offset.
func eachWord(text string, fn func(pos int, word string)) {
	for pos := 0; pos < len(text); {
		r, size := utf8.DecodeRuneInString(text[pos:])
		if !isWord(r) {
			pos += size
			continue
		}
		w := firstWord(text[pos:])
		fn(pos, w)
		pos += len(w)
	}
}

// textHits lists the patterns text holds as whole words, each once.
func (s *Mentions) textHits(text string) []string { return s.index.hits(text) }

// findOld records the known passages (not among added) that mention pat.
// Every word of pat is a whole word of a text that holds pat, so the
// candidates are the passages holding all of its indexed words (every
// passage when none of its words is indexed: all start lower-case),
// walked from the rarest word's list.
func (s *Mentions) findOld(ctx context.Context, pat string, added map[string]bool, text func(string) string) {
	var words []string
	eachWord(pat, func(_ int, w string) {
		if r, _ := utf8.DecodeRuneInString(w); !unicode.IsLower(r) {
			words = append(words, w)
		}
	})
	var keys []string
	if len(words) > 0 {
		keys = s.words.holdingAll(words)
	} else {
		for k := range s.hits {
			keys = append(keys, k)
		}
	}
	for i, k := range keys {
		if i%32 == 0 {
			parallel.Yield(ctx)
		}
		if _, known := s.hits[k]; !known || added[k] {
			continue
		}
		if holdsWord(text(k), pat) {
			s.touch(pat, false)
			s.dirty[k] = true
			s.hitBy(pat, k, true)
			s.hits[k] = append(s.hits[k], pat)
		}
	}
}

// holdsWord reports whether text holds pat as a whole word.
func holdsWord(text, pat string) bool {
	for from := 0; from <= len(text)-len(pat); {
		i := strings.Index(text[from:], pat)
		if i < 0 {
			return false
		}
		if boundary(text, from+i, from+i+len(pat)) {
			return true
		}
		from += i + 1
	}
	return false
}

func (s *Mentions) setHits(key string, hs []string) {
	s.dirty[key] = true
	for _, p := range hs {
		s.touch(p, false)
		s.hitBy(p, key, true)
	}
	if hs == nil {
		hs = []string{} // known, with no hit
	}
	s.hits[key] = hs
}

// Edges are the mention edges of the passages known, numbered by num
// (n passages in all: the automatic hit limit depends on it), as
// MentionEdges makes them: sorted by (source, destination), unit weight.
func (s *Mentions) Edges(n int, num func(key string) int32) []Edge {
	maxHits := s.maxHits(n)
	s.settle(maxHits)
	var es []Edge
	for _, e := range s.patterns {
		if !e.gives(maxHits) {
			continue
		}
		for a := range e.hitBy {
			for b := range e.owners {
				if a != b {
					es = append(es, Edge{Src: num(a), Dst: num(b), W: 1})
				}
			}
		}
	}
	sortEdges(es)
	return dedupEdges(es)
}

// maxHits is the hit limit over n passages: more hitters than that and a
// title gives no edges.
func (s *Mentions) maxHits(n int) int {
	if s.o.MaxTitleHits > 0 {
		return s.o.MaxTitleHits
	}
	return max(minHits, n/100)
}

// gives reports whether the pattern gives edges under the hit limit.
func (e *mentionPattern) gives(maxHits int) bool {
	return e != nil && len(e.owners) > 0 && len(e.hitBy) <= maxHits
}

// touch notes, before it changes, that pattern p's hitters (or owners)
// change.
func (s *Mentions) touch(p string, owners bool) {
	t, ok := s.touched[p]
	if !ok {
		t = &touch{was: s.lastMax > 0 && s.patterns[p].gives(s.lastMax)}
		s.touched[p] = t
	}
	t.owners = t.owners || owners
}

// settle marks the passages whose edges changed since the last edges were
// made, under the new limit, and starts a new round; it returns them. A
// title's hitters change their edges when it starts or stops giving edges
// or its owners change while it gives them; its new hitters are marked as
// they come. A new limit (the automatic one grows with the index) is
// checked against every title, once per change of the limit.
func (s *Mentions) settle(maxHits int) map[string]bool {
	mark := func(e *mentionPattern) {
		for a := range e.hitBy {
			s.dirty[a] = true
		}
	}
	for p, t := range s.touched {
		e := s.patterns[p]
		if now := e.gives(maxHits); e != nil && (now != t.was || (t.owners && now)) {
			mark(e)
		}
	}
	if s.lastMax > 0 && maxHits != s.lastMax {
		// Only a pattern with more hitters than the lower limit and no
		// more than the higher one gives edges under one and not the other.
		for c := min(maxHits, s.lastMax) + 1; c <= max(maxHits, s.lastMax); c++ {
			for p := range s.popular[c] {
				if e := s.patterns[p]; s.touched[p] == nil && e.gives(maxHits) != e.gives(s.lastMax) {
					mark(e)
				}
			}
		}
	}
	dirty := s.dirty
	s.lastMax, s.dirty, s.touched = maxHits, map[string]bool{}, map[string]*touch{}
	return dirty
}

// Rows are what changed in the mention edges since they were last made
// (Edges or Rows), over n passages numbered by num: the sources whose
// edges changed (ascending; passages no longer known are left out) and
// all of their edges, sorted as Edges sorts them. The other sources'
// edges are as they were. The first call after NewMentions is Edges's.
func (s *Mentions) Rows(n int, num func(key string) int32) (rows []int32, edges []Edge) {
	if s.lastMax == 0 {
		es := s.Edges(n, num)
		for _, e := range es {
			if len(rows) == 0 || rows[len(rows)-1] != e.Src {
				rows = append(rows, e.Src)
			}
		}
		return rows, es
	}
	maxHits := s.maxHits(n)
	keys := map[int32]string{}
	for a := range s.settle(maxHits) {
		if _, known := s.hits[a]; known {
			if src := num(a); src >= 0 {
				rows, keys[src] = append(rows, src), a
			}
		}
	}
	slices.Sort(rows)
	// At their size: a commit's dirty rows can hold 10⁵ edges. Row by
	// row: a hub row's edges sort on their own.
	edges = make([]Edge, 0, s.rowEdges(rows, keys, maxHits))
	for _, src := range rows {
		a, start := keys[src], len(edges)
		for _, p := range s.hits[a] {
			if e := s.patterns[p]; e.gives(maxHits) {
				for b := range e.owners {
					if b != a {
						edges = append(edges, Edge{Src: src, Dst: num(b), W: 1})
					}
				}
			}
		}
		sortEdges(edges[start:])
	}
	return rows, dedupEdges(edges)
}

// rowEdges bounds how many edges Rows makes for rows (by their keys):
// every owner of every pattern each row hits that gives edges.
func (s *Mentions) rowEdges(rows []int32, keys map[int32]string, maxHits int) int {
	n := 0
	for _, src := range rows {
		for _, p := range s.hits[keys[src]] {
			if e := s.patterns[p]; e.gives(maxHits) {
				n += len(e.owners)
			}
		}
	}
	return n
}

// sortEdges sorts by (source, destination).
func sortEdges(es []Edge) {
	slices.SortFunc(es, func(x, y Edge) int {
		if x.Src != y.Src {
			return int(x.Src - y.Src)
		}
		return int(x.Dst - y.Dst)
	})
}
