package corpus

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
)

// skippedElement names elements whose content is not text a reader sees.
func skippedElement(name string) bool {
	switch name {
	case "script", "style", "noscript", "template", "svg", "head":
		return true
	}
	return false
}

// blockElement names elements that end a text unit.
func blockElement(name string) bool {
	switch name {
	case "p", "div", "li", "ul", "ol", "dl", "dt", "dd", "pre", "blockquote", "table", "tr",
		"section", "article", "aside", "header", "footer", "nav", "main", "figure", "figcaption",
		"form", "fieldset", "details", "summary", "br", "hr", "address":
		return true
	}
	return false
}

// headingLevel is 1–6 for h1–h6, else 0.
func headingLevel(name string) int {
	if len(name) == 2 && name[0] == 'h' && name[1] >= '1' && name[1] <= '6' {
		return int(name[1] - '0')
	}
	return 0
}

// readHTML extracts an HTML file with x/net/html's tokenizer (which
// reports each token's raw bytes, so units keep their source offsets):
// <title> (else the first <h1>) is the title, <meta name content> fields are meta, headings
// start sections, block elements end units, <a href> are links.
func readHTML(src []byte) *sourceDoc {
	h := &htmlWalker{doc: &sourceDoc{meta: map[string]any{}}, start: -1}
	z := html.NewTokenizer(bytes.NewReader(src))
	for pos := 0; ; {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		raw := len(z.Raw())
		h.token(z, tt, pos, pos+raw)
		pos += raw
	}
	h.flush()
	d := h.doc
	d.finish(sectionPath(h.headings), len(src))
	if d.title == "" {
		d.title = h.firstHeading
	}
	if len(d.meta) == 0 {
		d.meta = nil
	}
	return d
}

type htmlWalker struct {
	doc          *sourceDoc
	skip         int // depth inside skipped elements
	inTitle      bool
	titled       bool // the first <title> is read
	svg          int  // depth inside <svg>
	headStart    int  // where the open heading starts
	inPre        int
	heading      int // level of the open heading, 0 when none
	headText     strings.Builder
	headings     []string
	firstHeading string
	text         strings.Builder
	links        []rawLink
	start, end   int // source range of the open unit
	href         string
}

func (h *htmlWalker) token(z *html.Tokenizer, tt html.TokenType, lo, hi int) {
	switch tt {
	case html.TextToken:
		h.textToken(string(z.Text()), lo, hi)
	case html.StartTagToken, html.SelfClosingTagToken:
		name, hasAttr := z.TagName()
		attrs := map[string]string{}
		for hasAttr {
			var k, v []byte
			k, v, hasAttr = z.TagAttr()
			attrs[string(k)] = string(v)
		}
		h.start1(string(name), attrs, tt == html.SelfClosingTagToken, lo)
	case html.EndTagToken:
		name, _ := z.TagName()
		h.end1(string(name))
	}
}

func (h *htmlWalker) textToken(s string, lo, hi int) {
	switch {
	case h.inTitle:
		h.doc.title = strings.Join(strings.Fields(h.doc.title+" "+s), " ")
	case h.skip > 0:
	case h.heading > 0:
		h.headText.WriteString(s)
	default:
		if strings.TrimSpace(s) == "" && h.text.Len() == 0 {
			return
		}
		if h.start < 0 {
			h.start = lo
		}
		h.end = hi
		h.text.WriteString(s)
	}
}

func (h *htmlWalker) start1(name string, attrs map[string]string, selfClosing bool, lo int) {
	switch {
	case name == "title" && h.svg == 0 && !h.titled: // the page's first <title>, not an SVG's
		h.inTitle = !selfClosing
	case name == "meta":
		if k, v := attrs["name"], strings.TrimSpace(attrs["content"]); k != "" && v != "" && checkMetaKey(k) == nil {
			h.doc.meta[k] = v
		}
	case skippedElement(name):
		if !selfClosing {
			h.skip++
			if name == "svg" {
				h.svg++
			}
		}
	case headingLevel(name) > 0:
		h.flush()
		h.heading = headingLevel(name)
		h.headStart = lo
		h.headText.Reset()
		if id := attrs["id"]; id != "" {
			h.doc.anchor(id)
		}
	case name == "a" && h.skip == 0:
		if href := strings.TrimSpace(attrs["href"]); href != "" {
			h.links = append(h.links, rawLink{target: href, offset: lo})
		}
		if id := attrs["id"]; id != "" {
			h.doc.anchor(id)
		}
	case name == "pre":
		h.flush()
		h.inPre++
	case blockElement(name):
		h.flush()
	}
}

func (h *htmlWalker) end1(name string) {
	switch {
	case name == "title" && h.inTitle:
		h.inTitle, h.titled = false, true
	case skippedElement(name):
		h.skip = max(0, h.skip-1)
		if name == "svg" {
			h.svg = max(0, h.svg-1)
		}
	case headingLevel(name) > 0 && h.heading > 0:
		title := strings.Join(strings.Fields(h.headText.String()), " ")
		if h.firstHeading == "" && h.heading == 1 {
			h.firstHeading = title
		}
		lvl := h.heading
		if lvl == 1 && len(h.doc.units) == 0 && len(h.doc.pending) == 0 && h.doc.pageHeading == "" {
			h.doc.pageHeading = title // a leading <h1> names the page, whatever <title> says
		} else {
			h.doc.heading(title, h.headStart)
		}
		path := h.headings[:min(lvl-1, len(h.headings))]
		for len(path) < lvl-1 {
			path = append(path, "")
		}
		h.headings = append(path, title)
		h.heading = 0
		h.doc.anchor(slug(title))
	case name == "pre":
		h.flush()
		h.inPre = max(0, h.inPre-1)
	case name == "td" || name == "th":
		h.text.WriteByte(' ') // cells apart: "MetricMeaning" is no word
	case blockElement(name):
		h.flush()
	}
}

// flush ends the open unit.
func (h *htmlWalker) flush() {
	s := h.text.String()
	if h.inPre == 0 {
		s = strings.Join(strings.Fields(s), " ")
	}
	if s = strings.TrimSpace(s); s != "" {
		h.doc.add(unit{section: sectionPath(h.headings), text: s, start: h.start, end: h.end, links: h.links})
		h.links = nil
	}
	h.text.Reset()
	h.start, h.end = -1, -1
}

// readText extracts a plain-text file: paragraphs (separated by blank
// lines) are its units; it has no title, links or metadata.
func readText(src []byte) *sourceDoc {
	d := &sourceDoc{}
	pos := 0
	for pos < len(src) {
		for pos < len(src) && (src[pos] == '\n' || src[pos] == '\r' || src[pos] == ' ' || src[pos] == '\t') {
			pos++
		}
		start := pos
		end := paragraphEnd(src, pos)
		if t := strings.TrimSpace(string(src[start:end])); t != "" {
			d.add(unit{text: t, start: start, end: start + len(strings.TrimRight(string(src[start:end]), " \t\r\n"))})
		}
		pos = end
	}
	return d
}

// paragraphEnd is the offset of the blank line ending the paragraph at pos.
func paragraphEnd(src []byte, pos int) int {
	for pos < len(src) {
		nl := bytes.IndexByte(src[pos:], '\n')
		if nl < 0 {
			return len(src)
		}
		next := pos + nl + 1
		rest := src[next:]
		line, _, _ := bytes.Cut(rest, []byte("\n"))
		if len(bytes.TrimSpace(line)) == 0 {
			return next
		}
		pos = next
	}
	return len(src)
}
