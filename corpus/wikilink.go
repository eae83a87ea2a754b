package corpus

import (
	"bytes"
	"strings"
	"unicode"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// wikiLink is a [[target]] or [[target|label]] link (Obsidian, MediaWiki,
// Foam): target is a page title or a path without extension.
type wikiLink struct {
	ast.BaseInline
	target, label string
	offset        int
}

var kindWikiLink = ast.NewNodeKind("WikiLink")

func (n *wikiLink) Kind() ast.NodeKind { return kindWikiLink }

func (n *wikiLink) Dump(src []byte, level int) {
	ast.DumpHelper(n, src, level, map[string]string{"Target": n.target, "Label": n.label}, nil)
}

// maxWikiLink bounds a wiki link's target and label, in bytes.
const maxWikiLink = 512

// wikiLinkParser parses [[…]] before the link parser sees its brackets.
type wikiLinkParser struct{}

func (wikiLinkParser) Trigger() []byte { return []byte{'['} }

func (wikiLinkParser) Parse(_ ast.Node, block text.Reader, _ parser.Context) ast.Node {
	line, seg := block.PeekLine()
	if !bytes.HasPrefix(line, []byte("[[")) {
		return nil
	}
	window := line[2:min(len(line), 2+maxWikiLink)] // a bounded look: a line of '[' stays linear
	end := bytes.Index(window, []byte("]]"))
	if end <= 0 {
		return nil
	}
	inner := string(line[2 : 2+end])
	if strings.ContainsAny(inner, "[]\n") {
		return nil
	}
	target, label, hasLabel := strings.Cut(inner, "|")
	target = strings.TrimSpace(target)
	if target == "" {
		return nil
	}
	if !hasLabel || strings.TrimSpace(label) == "" {
		label = target
		if i := strings.LastIndexByte(label, '/'); i >= 0 { // [[services/ledger]] reads "ledger"
			label = label[i+1:]
		}
		label, _, _ = strings.Cut(label, "#")
	}
	block.Advance(end + 4)
	return &wikiLink{target: target, label: strings.TrimSpace(label), offset: seg.Start}
}

// slug is a heading's anchor as GitHub and most renderers make it:
// lower case, letters, digits, '-' and '_' kept, spaces to '-'.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
