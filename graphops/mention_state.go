package graphops

import (
	"context"
	"fmt"
	"github.com/gleaner-rag/gleaner/internal/strtab"
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
// and texts. Passages and patterns are held by number (names), their
// sets as ascending lists of numbers. A Mentions is not safe for
// concurrent use.
type Mentions struct {
	o        MentionOptions
	passages strtab.Names // passage keys
	patterns strtab.Names // title patterns
	// By passage number: the patterns its text holds, and the pattern it
	// carries as title (−1: none).
	hits strtab.Sets
	owns []int32
	// By pattern number: the passages carrying it as title, and those
	// whose text holds it.
	owners, hitBy strtab.Sets
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
	dirty   map[int32]bool
	touched map[int32]touch
	// popular indexes the patterns held by more than minHits passages by
	// how many: when the hit limit moves, only those between its old and
	// new value can start or stop giving edges.
	popular map[int]map[int32]bool
}

// minHits is the least automatic hit limit (maxHits).
const minHits = 50

// recordHit records that passage a's text holds pattern p (or no longer does).
func (s *Mentions) recordHit(p, a int32, holds bool) {
	from := s.hitBy.Size(p)
	if holds {
		s.hitBy.Insert(p, a)
	} else {
		s.hitBy.Remove(p, a)
	}
	to := s.hitBy.Size(p)
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
			s.popular[to] = map[int32]bool{}
		}
		s.popular[to][p] = true
	}
}

type touch struct{ was, owners bool }

// NewMentions starts an empty state; o as MentionEdges takes it.
func NewMentions(o MentionOptions) (*Mentions, error) {
	if o.MinTitleLen < 1 || o.MaxTitleHits < 0 {
		return nil, fmt.Errorf("graphops: mentions: min title length must be ≥ 1 and max title hits ≥ 0 (0: automatic), got %d and %d", o.MinTitleLen, o.MaxTitleHits)
	}
	s := &Mentions{o: o, passages: strtab.NewNames(), patterns: strtab.NewNames(), words: newWordIndex(),
		dirty: map[int32]bool{}, touched: map[int32]touch{}, popular: map[int]map[int32]bool{}}
	s.index = newPatternIndex(s.patterns.Name)
	return s, nil
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

// entry is pattern p's number, and whether it is new.
func (s *Mentions) entry(p string) (int32, bool) {
	if v, ok := s.patterns.ID(p); ok {
		return v, false
	}
	v := s.patterns.Add(p)
	s.index.add(v)
	return v, true
}

// passage is key's number, given it when new.
func (s *Mentions) passage(key string) int32 {
	if a, ok := s.passages.ID(key); ok {
		return a
	}
	a := s.passages.Add(key)
	if int(a) == len(s.owns) {
		s.owns = append(s.owns, -1)
	}
	return a
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
		a, ok := s.passages.ID(k)
		if !ok {
			continue
		}
		for _, p := range s.hits.Get(a) {
			s.touch(p, false)
			s.recordHit(p, a, false)
			s.drop(p)
		}
		s.hits.Clear(a)
		s.words.remove(a)
		if p := s.owns[a]; p >= 0 {
			s.touch(p, true)
			s.owners.Remove(p, a)
			s.owns[a] = -1
			s.drop(p)
		}
		s.passages.Remove(a)
	}
}

// drop forgets a pattern nobody carries or mentions.
func (s *Mentions) drop(p int32) {
	if s.owners.Size(p) == 0 && s.hitBy.Size(p) == 0 {
		s.index.remove(p)
		s.patterns.Remove(p)
	}
}

// Add adds passages (keys new to the state); text returns a known
// passage's text (a new title is checked in the passages holding its
// first word). ctx only paces the work (parallel.Yield): stopping midway
// would leave the state half-followed.
func (s *Mentions) Add(ctx context.Context, ps []Passage, text func(key string) string) {
	var fresh []int32
	for _, p := range ps {
		pat := s.pattern(p.Title)
		if pat == "" {
			continue
		}
		v, isNew := s.entry(pat)
		if isNew {
			fresh = append(fresh, v)
		}
		s.touch(v, true)
		a := s.passage(p.Key)
		s.owners.Insert(v, a)
		s.owns[a] = v
	}
	added := make(map[string]bool, len(ps))
	for _, p := range ps {
		added[p.Key] = true
	}
	for _, v := range fresh {
		s.findOld(ctx, v, added, text)
	}
	for _, p := range ps {
		a := s.passage(p.Key)
		s.setHits(a, s.textHits(p.Text))
		s.words.add(a, p.Text)
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

// textHits lists the patterns text holds as whole words, each once, by
// number.
func (s *Mentions) textHits(text string) []int32 { return s.index.hits(text) }

// findOld records the known passages (not among added) that mention
// pattern v. Every word of the pattern is a whole word of a text that
// holds it, so the candidates are the passages holding all of its indexed
// words (every passage when none of its words is indexed: all start
// lower-case), walked from the rarest word's list.
func (s *Mentions) findOld(ctx context.Context, v int32, added map[string]bool, text func(string) string) {
	pat := s.patterns.Name(v)
	var words []string
	eachWord(pat, func(_ int, w string) {
		if r, _ := utf8.DecodeRuneInString(w); !unicode.IsLower(r) {
			words = append(words, w)
		}
	})
	var cands []int32
	if len(words) > 0 {
		cands = s.words.holdingAll(words)
	} else {
		for a := range int32(s.passages.Size()) {
			cands = append(cands, a)
		}
	}
	for i, a := range cands {
		if i%32 == 0 {
			parallel.Yield(ctx)
		}
		if !s.passages.Has(a) || added[s.passages.Name(a)] {
			continue
		}
		if holdsWord(text(s.passages.Name(a)), pat) {
			s.touch(v, false)
			s.dirty[a] = true
			s.recordHit(v, a, true)
			s.hits.Insert(a, v)
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

func (s *Mentions) setHits(a int32, hs []int32) {
	s.dirty[a] = true
	for _, p := range hs {
		s.touch(p, false)
		s.recordHit(p, a, true)
		s.hits.Insert(a, p)
	}
}

// Edges are the mention edges of the passages known, numbered by num
// (n passages in all: the automatic hit limit depends on it), as
// MentionEdges makes them: sorted by (source, destination), unit weight.
func (s *Mentions) Edges(n int, num func(key string) int32) []Edge {
	maxHits := s.maxHits(n)
	s.settle(maxHits)
	var es []Edge
	for p := range int32(s.patterns.Size()) {
		if !s.gives(p, maxHits) {
			continue
		}
		for _, a := range s.hitBy.Get(p) {
			for _, b := range s.owners.Get(p) {
				if a != b {
					es = append(es, Edge{Src: num(s.passages.Name(a)), Dst: num(s.passages.Name(b)), W: 1})
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

// gives reports whether pattern p gives edges under the hit limit.
func (s *Mentions) gives(p int32, maxHits int) bool {
	return s.patterns.Has(p) && s.owners.Size(p) > 0 && s.hitBy.Size(p) <= maxHits
}

// touch notes, before it changes, that pattern p's hitters (or owners)
// change.
func (s *Mentions) touch(p int32, owners bool) {
	t, ok := s.touched[p]
	if !ok {
		t = touch{was: s.lastMax > 0 && s.gives(p, s.lastMax)}
	}
	t.owners = t.owners || owners
	s.touched[p] = t
}

// settle marks the passages whose edges changed since the last edges were
// made, under the new limit, and starts a new round; it returns them. A
// title's hitters change their edges when it starts or stops giving edges
// or its owners change while it gives them; its new hitters are marked as
// they come. A new limit (the automatic one grows with the index) is
// checked against every title, once per change of the limit. The numbers
// of passages and patterns removed in the round are free after it.
func (s *Mentions) settle(maxHits int) map[int32]bool {
	mark := func(p int32) {
		for _, a := range s.hitBy.Get(p) {
			s.dirty[a] = true
		}
	}
	for p, t := range s.touched {
		if now := s.gives(p, maxHits); s.patterns.Has(p) && (now != t.was || (t.owners && now)) {
			mark(p)
		}
	}
	if s.lastMax > 0 && maxHits != s.lastMax {
		// Only a pattern with more hitters than the lower limit and no
		// more than the higher one gives edges under one and not the other.
		for c := min(maxHits, s.lastMax) + 1; c <= max(maxHits, s.lastMax); c++ {
			for p := range s.popular[c] {
				if _, seen := s.touched[p]; !seen && s.gives(p, maxHits) != s.gives(p, s.lastMax) {
					mark(p)
				}
			}
		}
	}
	dirty := s.dirty
	s.lastMax, s.dirty, s.touched = maxHits, map[int32]bool{}, map[int32]touch{}
	s.passages.Release()
	s.patterns.Release()
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
	passage := map[int32]int32{} // row → passage number
	for a := range s.settle(maxHits) {
		if s.passages.Has(a) {
			if src := num(s.passages.Name(a)); src >= 0 {
				rows, passage[src] = append(rows, src), a
			}
		}
	}
	slices.Sort(rows)
	// At their size: a commit's dirty rows can hold 10⁵ edges. Row by
	// row: a hub row's edges sort on their own.
	edges = make([]Edge, 0, s.rowEdges(rows, passage, maxHits))
	for _, src := range rows {
		a, start := passage[src], len(edges)
		for _, p := range s.hits.Get(a) {
			if s.gives(p, maxHits) {
				for _, b := range s.owners.Get(p) {
					if b != a {
						edges = append(edges, Edge{Src: src, Dst: num(s.passages.Name(b)), W: 1})
					}
				}
			}
		}
		sortEdges(edges[start:])
	}
	return rows, dedupEdges(edges)
}

// rowEdges bounds how many edges Rows makes for rows (by their passage
// numbers): every owner of every pattern each row hits that gives edges.
func (s *Mentions) rowEdges(rows []int32, passage map[int32]int32, maxHits int) int {
	n := 0
	for _, src := range rows {
		for _, p := range s.hits.Get(passage[src]) {
			if s.gives(p, maxHits) {
				n += s.owners.Size(p)
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
