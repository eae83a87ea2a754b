package graphops

// matcher is an Aho–Corasick automaton over bytes: one pass over a text
// finds every occurrence of every pattern, whatever the number of patterns.
type matcher struct {
	root  [256]int32 // transitions out of the root, completed (no failure needed)
	kids  [][]edge   // sparse transitions of the other states
	fail  []int32
	term  []int32 // pattern ending exactly here, or -1
	dict  []int32 // nearest proper suffix state with term ≥ 0, or -1
	depth []int32
}

type edge struct {
	b    byte
	next int32
}

func (m *matcher) child(s int32, b byte) int32 {
	if s == 0 {
		return m.root[b]
	}
	for _, e := range m.kids[s] {
		if e.b == b {
			return e.next
		}
	}
	return -1
}

func (m *matcher) addState(depth int32) int32 {
	m.kids, m.fail = append(m.kids, nil), append(m.fail, 0)
	m.term, m.dict, m.depth = append(m.term, -1), append(m.dict, -1), append(m.depth, depth)
	return int32(len(m.term) - 1)
}

// newMatcher builds the automaton; pattern i is reported as id i.
func newMatcher(patterns []string) *matcher {
	m := &matcher{}
	m.addState(0)
	for i := range m.root {
		m.root[i] = -1
	}
	for id, p := range patterns {
		s := int32(0)
		for i := 0; i < len(p); i++ {
			next := m.child(s, p[i])
			if next < 0 {
				next = m.addState(int32(i + 1))
				if s == 0 {
					m.root[p[i]] = next
				} else {
					m.kids[s] = append(m.kids[s], edge{p[i], next})
				}
			}
			s = next
		}
		if len(p) > 0 && m.term[s] < 0 {
			m.term[s] = int32(id)
		}
	}
	m.link()
	return m
}

// link computes failure and dictionary links breadth-first.
func (m *matcher) link() {
	var queue []int32
	for b := 0; b < 256; b++ {
		if s := m.root[b]; s > 0 {
			queue = append(queue, s)
		} else {
			m.root[b] = 0
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, e := range m.kids[s] {
			f := m.fail[s]
			for f != 0 && m.child(f, e.b) < 0 {
				f = m.fail[f]
			}
			if c := m.child(f, e.b); c >= 0 && c != e.next {
				m.fail[e.next] = c
			}
			if t := m.fail[e.next]; m.term[t] >= 0 {
				m.dict[e.next] = t
			} else {
				m.dict[e.next] = m.dict[t]
			}
			queue = append(queue, e.next)
		}
	}
}

// scan reports every match as (pattern id, start, end) byte offsets.
func (m *matcher) scan(text string, emit func(id int32, start, end int)) {
	s := int32(0)
	for i := 0; i < len(text); i++ {
		b := text[i]
		for s != 0 && m.child(s, b) < 0 {
			s = m.fail[s]
		}
		s = m.child(s, b)
		for t := s; t > 0; t = m.dict[t] {
			if m.term[t] >= 0 {
				emit(m.term[t], i+1-int(m.depth[t]), i+1)
			}
		}
	}
}

// Matcher finds every occurrence of a set of byte patterns in one pass over
// a text (Aho–Corasick). Built once, it is read-only and safe for
// concurrent use. Of patterns that are equal, the first one's index is
// reported.
type Matcher struct{ m *matcher }

// NewMatcher builds a matcher; pattern i is reported as i. Empty patterns
// never match.
func NewMatcher(patterns []string) *Matcher { return &Matcher{newMatcher(patterns)} }

// Scan reports every occurrence, overlapping ones included, as (pattern,
// start, end) byte offsets, in order of end.
func (m *Matcher) Scan(text string, emit func(pattern int32, start, end int)) { m.m.scan(text, emit) }

// IsWholeWord reports whether text[start:end] is delimited by non-word
// runes (neither letter nor digit) or the ends of text.
func IsWholeWord(text string, start, end int) bool { return boundary(text, start, end) }
