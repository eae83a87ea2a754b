package corpus

import (
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
)

// sourceDoc is one file's extracted content.
type sourceDoc struct {
	rel, title   string
	pageHeading  string // a leading "# Heading" naming the page
	src          []byte
	lines        []int // offsets of line starts, made by line
	aliases      []string
	meta         map[string]any
	units        []unit
	anchors      map[string]int // heading or element id → the unit it opens
	notes        []string       // warnings about how the file was read
	pending      []string       // headings waiting for the next unit
	pendingStart int            // where the first of them starts
	passages     []passage      // after cut
}

// unit is a block of text (a paragraph, list, table or code block) under
// a heading path, with its byte range in the file and the links it holds.
type unit struct {
	section    string
	text       string
	start, end int
	links      []rawLink
}

// linksOf are the links of piece j of n equal cuts of the unit: those whose
// source offset falls in the piece's share of the unit's span (markup makes
// the share approximate; each link goes to exactly one piece).
func (u *unit) linksOf(j, n int) []rawLink {
	width := max(1, u.end-u.start)
	var out []rawLink
	for _, l := range u.links {
		at := min(n-1, max(0, (l.offset-u.start)*n/width))
		if at == j {
			out = append(out, l)
		}
	}
	return out
}

// rawLink is a link as written, at a byte offset of the file.
type rawLink struct {
	target   string
	wiki     bool
	external bool // a bare URL or e-mail address
	offset   int
}

// passage is a run of units [lo, hi) that becomes one node; words cut a
// unit longer than MaxWords, so a passage may hold part of one.
type passage struct {
	lo, hi  int
	section string
	text    string
	links   []rawLink
}

// line is the 1-based line of byte off (0 when unknown), by binary search
// over the line starts, found once: a page of many links stays linear.
func (d *sourceDoc) line(off int) int {
	if off < 0 {
		return 0
	}
	if d.lines == nil {
		d.lines = []int{0}
		for i, c := range d.src {
			if c == '\n' {
				d.lines = append(d.lines, i+1)
			}
		}
	}
	i, _ := slices.BinarySearch(d.lines, off+1)
	return i
}

// resolvedPath is where a relative file link points under the root ("" for
// wiki links, or when that is the link as written).
func (d *sourceDoc) resolvedPath(l rawLink) string {
	target, _, _ := strings.Cut(l.target, "#")
	if l.wiki || target == "" || strings.HasPrefix(target, "/") {
		return ""
	}
	if p := path.Join(path.Dir(d.rel), target); p != target {
		return p
	}
	return ""
}

// id is the document's id.
func (d *sourceDoc) id() string { return PathID(d.rel) }

// add appends a unit, opening it with the headings seen since the last
// unit: a heading's words stay searchable, and a passage that took in a
// short section still holds that section's heading.
func (d *sourceDoc) add(u unit) {
	if len(d.pending) > 0 {
		u.text = strings.TrimSpace(strings.Join(d.pending, "\n") + "\n" + u.text)
		u.start = min(u.start, d.pendingStart)
		if u.end < u.start {
			u.end = u.start
		}
		d.pending = nil
	}
	if u.text != "" {
		d.units = append(d.units, u)
	}
}

// heading records a section heading at byte start for the next unit.
func (d *sourceDoc) heading(text string, start int) {
	if text == "" {
		return
	}
	if len(d.pending) == 0 {
		d.pendingStart = start
	}
	d.pending = append(d.pending, text)
}

// finish keeps headings no text followed, as a unit of their own.
func (d *sourceDoc) finish(section string, end int) {
	if len(d.pending) > 0 {
		d.add(unit{section: section, start: d.pendingStart, end: end})
	}
}

// anchor names the next unit (a heading's slug, an element id); the
// first use of a name wins, as in a browser.
func (d *sourceDoc) anchor(name string) {
	if name == "" {
		return
	}
	if d.anchors == nil {
		d.anchors = map[string]int{}
	}
	if _, ok := d.anchors[name]; !ok {
		d.anchors[name] = len(d.units)
	}
}

// cut packs the units into passages of at most maxWords words: a new
// passage starts at a heading once the open one holds minWords words, and
// when the next unit would not fit; a unit longer than maxWords is split
// at words.
func (d *sourceDoc) cut(maxWords, minWords int) {
	var open *passage
	words := 0
	closeOpen := func() {
		if open != nil {
			d.passages = append(d.passages, *open)
			open, words = nil, 0
		}
	}
	for i, u := range d.units {
		n := len(strings.Fields(u.text))
		newSection := open != nil && u.section != open.section && words >= minWords
		if open != nil && (newSection || words+n > maxWords) {
			closeOpen()
		}
		if n > maxWords {
			pieces := splitWords(u.text, maxWords)
			for j, piece := range pieces {
				d.passages = append(d.passages, passage{lo: i, hi: i + 1, section: u.section, text: piece, links: u.linksOf(j, len(pieces))})
			}
			continue
		}
		if open == nil {
			open = &passage{lo: i, hi: i, section: u.section}
		}
		if open.text != "" {
			open.text += "\n\n"
		}
		open.text += u.text
		open.hi = i + 1
		open.links = append(open.links, u.links...)
		words += n
	}
	closeOpen()
}

// splitWords cuts text into pieces of at most n words (white space inside
// a piece kept, so code keeps its lines). maxPieceBytes also bounds a piece,
// so a "word" of megabytes cannot make a record over the limit.
func splitWords(text string, n int) []string {
	var out []string
	start, count, inWord := 0, 0, false
	for i, r := range text {
		space := r == ' ' || r == '\n' || r == '\t' || r == '\r'
		if !space && !inWord {
			if count == n || i-start >= maxPieceBytes {
				out = append(out, strings.TrimSpace(text[start:i]))
				start, count = i, 0
			}
			count++
		}
		if !space && inWord && i-start >= maxPieceBytes {
			out = append(out, strings.TrimSpace(text[start:i]))
			start, count = i, 1
		}
		inWord = !space
	}
	if t := strings.TrimSpace(text[start:]); t != "" {
		out = append(out, t)
	}
	return out
}

// maxPieceBytes bounds one passage cut from a long unit.
const maxPieceBytes = 1 << 20

// passageID is the id of a document's i-th passage, "<id>#<i+1>": a
// passage keeps its id when the document grows, and a document id is never
// a passage's.
func (d *sourceDoc) passageID(i int) string { return d.id() + "#" + strconv.Itoa(i+1) }

// corpus cuts every document and resolves links into edges.
func (im *importer) corpus() *Corpus {
	c := &Corpus{}
	for _, d := range im.docs {
		d.cut(im.o.MaxWords, im.o.MinWords)
		if len(d.passages) == 0 { // a title with no body: one passage of the title
			d.passages = []passage{{}}
		}
		for i, p := range d.passages {
			c.Nodes = append(c.Nodes, d.node(i, p))
		}
	}
	im.rep.Passages = len(c.Nodes)
	c.Edges = im.linkEdges()
	im.rep.Links = len(c.Edges)
	return c
}

// node makes passage i's node.
func (d *sourceDoc) node(i int, p passage) Node {
	section := p.section
	for _, page := range []string{d.pageHeading, d.title} { // the page's own "# Title" is its title, not a section
		if page != "" && (section == page || strings.HasPrefix(section, page+SectionSep)) {
			section = strings.TrimPrefix(strings.TrimPrefix(section, page), SectionSep)
		}
	}
	title := d.title
	if section != "" {
		title += SectionSep + section
	}
	n := Node{ID: d.passageID(i), Title: title, Text: p.text, Section: section, Meta: d.meta}
	if i == 0 {
		n.Aliases = d.aliases
	}
	n.Doc = d.id()
	if p.hi > p.lo {
		n.Span = &Span{Start: d.units[p.lo].start, End: d.units[p.hi-1].end}
	}
	return n
}

// linkEdges resolves every passage's links to the passages they point to.
func (im *importer) linkEdges() []Edge {
	r := newResolver(im.docs)
	var edges []Edge
	seen := map[[2]string]bool{}
	for _, d := range im.docs {
		for i, p := range d.passages {
			from := d.passageID(i)
			for _, l := range p.links {
				to, ok, external, ambiguous := r.resolve(d, l)
				if ambiguous {
					im.rep.Ambiguous = append(im.rep.Ambiguous, Dangling{From: d.id(), Line: d.line(l.offset), Target: l.target})
				}
				switch {
				case external:
					im.rep.External++
				case !ok:
					im.rep.Dangling = append(im.rep.Dangling, Dangling{From: d.id(), Line: d.line(l.offset), Target: l.target, Path: d.resolvedPath(l)})
				case to == from:
					im.rep.NotLinked++
				case !seen[[2]string{from, to}]:
					seen[[2]string{from, to}] = true
					edges = append(edges, Edge{Src: from, Dst: to, Weight: 1, Kind: LinksKind})
				}
			}
		}
	}
	return edges
}

// resolver finds the passage a link points to.
type resolver struct {
	byPath  map[string]*sourceDoc // relative path
	byStem  map[string]*sourceDoc // relative path without extension
	byTitle map[string]*sourceDoc // folded title, alias or file name (first in path order wins)
	shared  map[string]bool       // folded names several documents have
}

func newResolver(docs []*sourceDoc) *resolver {
	r := &resolver{byPath: map[string]*sourceDoc{}, byStem: map[string]*sourceDoc{}, byTitle: map[string]*sourceDoc{}, shared: map[string]bool{}}
	for _, d := range docs {
		r.byPath[d.rel] = d
		stem := strings.TrimSuffix(d.rel, path.Ext(d.rel))
		if _, ok := r.byStem[stem]; !ok {
			r.byStem[stem] = d
		}
		for _, name := range append([]string{d.title, titleFromName(d.rel)}, d.aliases...) {
			if k := foldName(name); k != "" {
				if other, ok := r.byTitle[k]; !ok {
					r.byTitle[k] = d
				} else if other != d {
					r.shared[k] = true
				}
			}
		}
	}
	return r
}

// foldName compares names case- and separator-insensitively.
func foldName(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == '-' || r == '_' || r == ' ' || r == '\t' }), " ")
}

// resolve returns the target passage id; external is true for URLs.
// ambiguous is set when a wiki link's name fits several documents.
func (r *resolver) resolve(from *sourceDoc, l rawLink) (id string, ok, external, ambiguous bool) {
	if l.external {
		return "", false, true, false
	}
	target, anchor, _ := strings.Cut(l.target, "#")
	if l.wiki {
		d := r.byRelPath(from, "/"+target) // wiki paths are the root's
		if d == nil {
			d = r.byRelPath(from, target)
		}
		if d == nil {
			d = r.byTitle[foldName(target)]
			ambiguous = d != nil && r.shared[foldName(target)]
		}
		if d == nil {
			return "", false, false, false
		}
		return d.passageFor(slug(anchor)), true, false, ambiguous
	}
	u, err := url.Parse(l.target)
	if err != nil || u.Scheme != "" || u.Host != "" || strings.HasPrefix(l.target, "//") {
		return "", false, err == nil, false
	}
	if u.Path == "" { // "#section" of the same document
		return from.passageFor(u.Fragment), true, false, false
	}
	d := r.byRelPath(from, u.Path)
	if d == nil {
		return "", false, false, false
	}
	return d.passageFor(u.Fragment), true, false, false
}

// byRelPath finds the document at p, relative to from's folder or, with a
// leading '/', to the root; the extension may be left out, and a folder
// stands for its index or README.
func (r *resolver) byRelPath(from *sourceDoc, p string) *sourceDoc {
	var full string
	if strings.HasPrefix(p, "/") {
		full = path.Clean(strings.TrimPrefix(p, "/"))
	} else {
		full = path.Join(path.Dir(from.rel), p)
	}
	if full == ".." || strings.HasPrefix(full, "../") {
		return nil // outside the root
	}
	for _, cand := range []string{full, full + "/index", full + "/README", full + "/readme"} {
		if d := r.byPath[cand]; d != nil {
			return d
		}
		if d := r.byStem[cand]; d != nil {
			return d
		}
	}
	return nil
}

// passageFor is the id of the passage holding anchor, or the first.
func (d *sourceDoc) passageFor(anchor string) string {
	u, ok := d.anchors[anchor]
	if !ok || anchor == "" {
		return d.passageID(0)
	}
	for i, p := range d.passages {
		if u < p.hi || i == len(d.passages)-1 {
			return d.passageID(i)
		}
	}
	return d.passageID(0)
}
