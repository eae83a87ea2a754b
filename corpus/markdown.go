package corpus

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
	"golang.org/x/net/html"
)

// markdown parses CommonMark with GitHub's tables and strikethrough, and
// [[wiki links]]; linkify makes bare URLs links, so they are dropped with
// the others.
var markdown = goldmark.New(
	goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.Linkify),
	goldmark.WithParserOptions(parser.WithInlineParsers(util.Prioritized(wikiLinkParser{}, 199))),
)

// readMarkdown extracts a Markdown file: YAML front-matter, then the
// body's blocks as text units under their heading path.
func readMarkdown(src []byte) (*sourceDoc, error) {
	d := &sourceDoc{}
	body, offset, err := d.frontMatter(src)
	if err != nil {
		return nil, err
	}
	w := &mdWalker{doc: d}
	for _, seg := range segments(body) {
		if seg.plain {
			// Not prose: a table of millions of cells or a paragraph of
			// thousands of open brackets costs goldmark quadratic time or
			// hundreds of times its size in memory. Read it as text.
			t := readText(body[seg.start:seg.end])
			for _, u := range t.units {
				u.section = sectionPath(w.headings)
				u.start, u.end = u.start+offset+seg.start, u.end+offset+seg.start
				d.add(u)
			}
			d.notes = append(d.notes, fmt.Sprintf("line %d: a block of %d bytes with %d '[' is not prose: read as plain text, not Markdown",
				lineAt(src, offset+seg.start), seg.end-seg.start, bytes.Count(body[seg.start:seg.end], []byte("["))))
			continue
		}
		w.src, w.base = body[seg.start:seg.end], offset+seg.start
		w.blocks(markdown.Parser().Parse(text.NewReader(w.src)))
	}
	d.finish(sectionPath(w.headings), len(src))
	if d.title == "" {
		d.title = w.firstHeading
	}
	return d, nil
}

// Bounds on a block of lines without a blank one that goldmark parses:
// longer blocks, or blocks of more open brackets, are read as plain text.
const (
	maxMarkdownBlock    = 64 << 10
	maxMarkdownBrackets = 2000
)

// segment is a byte range of a Markdown body: runs of ordinary blocks, or
// one block too large to parse as Markdown (plain).
type segment struct {
	start, end int
	plain      bool
}

// segments cuts src at blank lines around blocks too large for goldmark;
// a file without one is a single segment.
func segments(src []byte) []segment {
	var out []segment
	open := 0 // start of the ordinary run
	for _, b := range blocks(src) {
		if b.end-b.start <= maxMarkdownBlock && bytes.Count(src[b.start:b.end], []byte("[")) <= maxMarkdownBrackets {
			continue
		}
		if b.start > open {
			out = append(out, segment{start: open, end: b.start})
		}
		out = append(out, segment{start: b.start, end: b.end, plain: true})
		open = b.end
	}
	if open < len(src) || len(out) == 0 {
		out = append(out, segment{start: open, end: len(src)})
	}
	return out
}

// blocks are src's runs of lines without a blank line.
func blocks(src []byte) []segment {
	var out []segment
	start := -1
	for pos := 0; pos < len(src); {
		end := len(src)
		if nl := bytes.IndexByte(src[pos:], '\n'); nl >= 0 {
			end = pos + nl
		}
		blank := len(bytes.TrimSpace(src[pos:end])) == 0
		switch {
		case blank && start >= 0:
			out = append(out, segment{start: start, end: pos})
			start = -1
		case !blank && start < 0:
			start = pos
		}
		pos = end + 1
	}
	if start >= 0 {
		out = append(out, segment{start: start, end: len(src)})
	}
	return out
}

// mdWalker turns Markdown blocks into text units.
type mdWalker struct {
	src          []byte
	base         int // offset of src in the file
	doc          *sourceDoc
	headings     []string // current heading path, by level
	firstHeading string
}

func (w *mdWalker) blocks(parent ast.Node) {
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		switch n := n.(type) {
		case *ast.Heading:
			w.heading(n)
		case *ast.Blockquote:
			w.blocks(n)
		case *ast.ThematicBreak:
		default:
			w.unit(n)
		}
	}
}

func (w *mdWalker) heading(h *ast.Heading) {
	var il inlineText
	il.walk(h, w.src)
	title := strings.Join(strings.Fields(il.b.String()), " ")
	page := false
	if w.firstHeading == "" && h.Level == 1 { // "## Overview" names a section, not the page
		w.firstHeading = title
		if len(w.doc.units) == 0 && len(w.doc.pending) == 0 {
			w.doc.pageHeading, page = title, true // "# Page name" at the top names the page: not a section of it
		}
	}
	if !page {
		start, _ := blockSpan(h)
		w.doc.heading(title, w.base+start)
	}
	lvl := max(1, min(h.Level, 6))
	path := w.headings[:min(lvl-1, len(w.headings))]
	for len(path) < lvl-1 { // a skipped level ("#" then "###") keeps each heading at its depth
		path = append(path, "")
	}
	w.headings = append(path, title)
	w.doc.anchor(slug(title))
}

// unit emits one block (a paragraph, a list, a table, code) as a unit.
func (w *mdWalker) unit(n ast.Node) {
	var il inlineText
	switch b := n.(type) {
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		il.lines(b, w.src)
	case *ast.HTMLBlock:
		il.b.WriteString(htmlBlockText(b, w.src))
	default:
		il.walk(n, w.src)
	}
	start, end := blockSpan(n)
	w.doc.add(unit{
		section: sectionPath(w.headings),
		text:    strings.TrimSpace(il.b.String()),
		start:   w.base + start, end: w.base + end,
		links: shift(il.links, w.base),
	})
}

func shift(ls []rawLink, by int) []rawLink {
	for i := range ls {
		ls[i].offset += by
	}
	return ls
}

// sectionPath joins the non-empty headings.
func sectionPath(h []string) string {
	var parts []string
	for _, s := range h {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, SectionSep)
}

// inlineText collects a block's text with markup stripped: link text kept,
// URLs and raw HTML dropped, code kept; and the links it holds.
type inlineText struct {
	b     strings.Builder
	links []rawLink
}

func (t *inlineText) walk(n ast.Node, src []byte) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			t.b.Write(c.Segment.Value(src))
			if c.HardLineBreak() {
				t.b.WriteByte('\n')
			} else if c.SoftLineBreak() {
				t.b.WriteByte(' ')
			}
		case *ast.String:
			t.b.Write(c.Value)
		case *ast.Link:
			t.links = append(t.links, rawLink{target: string(c.Destination), offset: firstOffset(c)})
			t.walk(c, src)
		case *wikiLink:
			t.links = append(t.links, rawLink{target: c.target, wiki: true, offset: c.offset})
			t.b.WriteString(c.label)
		case *ast.AutoLink:
			// a URL is not text a question asks about: counted, dropped;
			// an e-mail address is, and stays
			t.links = append(t.links, rawLink{external: true})
			if c.AutoLinkType == ast.AutoLinkEmail {
				t.b.Write(c.Label(src))
			}
		case *ast.RawHTML:
			// nor is a tag
		case *east.TableRow, *east.TableHeader:
			t.walk(c, src)
			t.b.WriteByte('\n')
		case *east.TableCell:
			t.walk(c, src)
			t.b.WriteByte('\t')
		case *ast.ListItem:
			t.blockChildren(c, src)
			t.b.WriteByte('\n')
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			t.lines(c, src)
		default:
			if c.Type() == ast.TypeBlock {
				t.blockChildren(c, src)
			} else {
				t.walk(c, src)
			}
		}
	}
}

// blockChildren is walk for a container block: its blocks on their own lines.
func (t *inlineText) blockChildren(n ast.Node, src []byte) {
	if n.Type() == ast.TypeBlock && n.FirstChild() == nil {
		return
	}
	if n.FirstChild() != nil && n.FirstChild().Type() == ast.TypeInline {
		t.walk(n, src)
		t.b.WriteByte('\n')
		return
	}
	t.walk(n, src)
}

// lines appends a code block's lines verbatim.
func (t *inlineText) lines(n ast.Node, src []byte) {
	ls := n.Lines()
	for i := range ls.Len() {
		seg := ls.At(i)
		t.b.Write(seg.Value(src))
	}
	t.b.WriteByte('\n')
}

// firstOffset is where a link's text starts in the body (−1 when unknown).
func firstOffset(n ast.Node) int {
	for c := n.FirstChild(); c != nil; c = c.FirstChild() {
		if tx, ok := c.(*ast.Text); ok {
			return tx.Segment.Start
		}
	}
	return n.Pos()
}

// blockSpan is the byte range a block and its descendants cover in the
// body.
func blockSpan(n ast.Node) (start, end int) {
	start, end = -1, -1
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		if c.Type() == ast.TypeBlock {
			ls := c.Lines()
			for i := range ls.Len() {
				seg := ls.At(i)
				if start < 0 || seg.Start < start {
					start = seg.Start
				}
				end = max(end, seg.Stop)
			}
		}
		if t, ok := c.(*ast.Text); ok {
			if start < 0 || t.Segment.Start < start {
				start = t.Segment.Start
			}
			end = max(end, t.Segment.Stop)
		}
		return ast.WalkContinue, nil
	})
	if p := n.Pos(); p >= 0 && (start < 0 || p < start) {
		start = p
	}
	if start < 0 {
		return 0, 0
	}
	return start, max(start, end)
}

// htmlBlockText is the text of raw HTML inside Markdown (tags dropped).
func htmlBlockText(n *ast.HTMLBlock, src []byte) string {
	var raw bytes.Buffer
	ls := n.Lines()
	for i := range ls.Len() {
		seg := ls.At(i)
		raw.Write(seg.Value(src))
	}
	if n.HasClosure() {
		raw.Write(n.ClosureLine.Value(src))
	}
	var b strings.Builder
	z := html.NewTokenizer(&raw)
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.Join(strings.Fields(b.String()), " ")
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
				b.WriteByte(' ')
			}
		case html.StartTagToken:
			if name, _ := z.TagName(); skippedElement(string(name)) {
				skip++
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); skippedElement(string(name)) && skip > 0 {
				skip--
			}
		}
	}
}
