package corpus

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func importTree(t *testing.T, root string, o FilesOptions) (*Corpus, *FilesReport) {
	t.Helper()
	c, rep, err := FromFiles(context.Background(), root, o)
	if err != nil {
		t.Fatal(err)
	}
	return c, rep
}

func nodeByID(t *testing.T, c *Corpus, id string) Node {
	t.Helper()
	for _, n := range c.Nodes {
		if n.ID == id {
			return n
		}
	}
	var ids []string
	for _, n := range c.Nodes {
		ids = append(ids, n.ID)
	}
	t.Fatalf("no node %q; have %v", id, ids)
	return Node{}
}

var wikiTree = map[string]string{
	"index.md": `---
title: Team Wiki
tags: [start, wiki]
updated: 2025-03-14
owner:
  name: Ada
  team: platform
---
Welcome. Read about [payments](teams/payments.md), the [[Ledger]] and the
[[services/gateway|front door]]. See https://example.com/x and [the site](https://example.com).
Also [an old page](projects/atlas-v0.md).
`,
	"teams/payments.md": "# Payments team\n\nThe payments team owns the [ledger](../services/ledger.md#on-call) and is led by Orla.\n",
	"services/ledger.md": `# Ledger

The ledger records every transfer.

## On call

Page the ` + "`payments`" + ` rota. Run:

` + "```sh\nledgerctl drain --all\n```" + `
`,
	"services/gateway.html": `<html><head><title>Gateway</title><meta name="owner" content="edge"><style>p{}</style></head>
<body><h1>Gateway</h1><p>The gateway fronts <a href="ledger.md">the ledger</a>.</p><script>var x=1</script></body></html>`,
	"notes/plain-notes.txt": "First paragraph of notes.\n\nSecond paragraph.\n",
	"images/logo.png":       "\x89PNG not text",
	".git/config":           "[core]",
}

func TestFromFilesTextTitlesMetaAndLinks(t *testing.T) {
	c, rep := importTree(t, writeFiles(t, wikiTree), DefaultFilesOptions())
	if rep.Files != 5 || rep.Ignored != 1 {
		t.Fatalf("files %d ignored %d, want 5 and 1 (the png; .git is hidden)", rep.Files, rep.Ignored)
	}
	idx := nodeByID(t, c, "index.md#1")
	if idx.Title != "Team Wiki" || idx.Doc != "index.md" {
		t.Fatalf("front-matter title: %+v", idx)
	}
	wantMeta := map[string]any{"title": "Team Wiki", "tags": []any{"start", "wiki"}, "updated": "2025-03-14", "owner.name": "Ada", "owner.team": "platform"}
	if !reflect.DeepEqual(idx.Meta, wantMeta) {
		t.Fatalf("meta %#v, want %#v", idx.Meta, wantMeta)
	}
	for _, gone := range []string{"https://", "[[", "](", "teams/payments.md"} {
		if strings.Contains(idx.Text, gone) {
			t.Fatalf("markup %q left in %q", gone, idx.Text)
		}
	}
	for _, kept := range []string{"payments", "Ledger", "front door", "the site", "an old page"} {
		if !strings.Contains(idx.Text, kept) {
			t.Fatalf("link text %q lost from %q", kept, idx.Text)
		}
	}
	if n := nodeByID(t, c, "teams/payments.md#1"); n.Title != "Payments team" {
		t.Fatalf("first-heading title: %q", n.Title)
	}
	if n := nodeByID(t, c, "notes/plain-notes.txt#1"); n.Title != "plain notes" || n.Text != "First paragraph of notes.\n\nSecond paragraph." {
		t.Fatalf("text file: %+v", n)
	}
	gw := nodeByID(t, c, "services/gateway.html#1")
	if gw.Title != "Gateway" || gw.Text != "The gateway fronts the ledger." || gw.Meta["owner"] != "edge" {
		t.Fatalf("html: %+v", gw)
	}
	ledger := nodeByID(t, c, "services/ledger.md#2") // "## On call" starts a passage, and opens its text
	if !strings.HasPrefix(ledger.Text, "On call\nPage the payments rota") || !strings.Contains(ledger.Text, "ledgerctl drain --all") || ledger.Title != "Ledger > On call" {
		t.Fatalf("code kept, heading and title: %+v", ledger)
	}
	var got []string
	for _, e := range c.Edges {
		got = append(got, e.Src+" → "+e.Dst)
		if e.Kind != LinksKind {
			t.Fatalf("edge kind %q", e.Kind)
		}
	}
	want := []string{
		"index.md#1 → teams/payments.md#1",
		"index.md#1 → services/ledger.md#1",
		"index.md#1 → services/gateway.html#1",
		"services/gateway.html#1 → services/ledger.md#1", // files in path order
		"teams/payments.md#1 → services/ledger.md#2",     // #on-call: the passage holding that heading
	}
	if !slices.Equal(got, want) {
		t.Fatalf("edges\n got %q\nwant %q", got, want)
	}
	if rep.External != 2 || len(rep.Dangling) != 1 || rep.Dangling[0] != (Dangling{From: "index.md", Line: 11, Target: "projects/atlas-v0.md"}) {
		t.Fatalf("external %d dangling %+v", rep.External, rep.Dangling)
	}
}

func TestFromFilesGlobs(t *testing.T) {
	root := writeFiles(t, wikiTree)
	o := DefaultFilesOptions()
	o.Include, o.Exclude = []string{"**/*.md"}, []string{"services"}
	c, rep := importTree(t, root, o)
	var ids []string
	for _, n := range c.Nodes {
		ids = append(ids, n.ID)
	}
	if !slices.Equal(ids, []string{"index.md#1", "teams/payments.md#1"}) {
		t.Fatalf("ids %v", ids)
	}
	if rep.Ignored != 2 {
		t.Fatalf("ignored %d, want 2 (png, txt; nothing counted in the excluded folder)", rep.Ignored)
	}
	o.Hidden = true
	o.Include = []string{"config"}
	o.Exclude = nil
	if c, _ = importTree(t, root, o); len(c.Nodes) != 1 || c.Nodes[0].ID != ".git/config#1" {
		t.Fatalf("hidden: %+v", c.Nodes)
	}
}

// longDoc is a document of sections of n-word paragraphs.
func longDoc() string {
	var b strings.Builder
	b.WriteString("# Handbook\n\nIntro words here.\n\n")
	for s, name := range []string{"Setup", "Rollback", "Escalation"} {
		b.WriteString("## " + name + "\n\n")
		for p := range 3 {
			for w := range 60 {
				b.WriteString(string(rune('a'+s)) + string(rune('a'+p)) + string(rune('a'+w%26)) + " ")
			}
			b.WriteString("\n\n")
		}
	}
	b.WriteString("### Deep\n\n[back](#rollback)\n")
	return b.String()
}

func TestFromFilesCutsDocumentsAtHeadings(t *testing.T) {
	src := longDoc()
	o := DefaultFilesOptions()
	o.MaxWords, o.MinWords = 130, 10
	c, _ := importTree(t, writeFiles(t, map[string]string{"h.md": src}), o)
	var sections []string
	for i, n := range c.Nodes {
		if n.Doc != "h.md" || n.ID != "h.md#"+itoa(i+1) {
			t.Fatalf("passage %d: id %q doc %q", i, n.ID, n.Doc)
		}
		if words := len(strings.Fields(n.Text)); words > o.MaxWords {
			t.Fatalf("passage %q has %d words", n.ID, words)
		}
		wantTitle := "Handbook"
		if n.Section != "" {
			wantTitle += SectionSep + n.Section
		}
		if n.Title != wantTitle {
			t.Fatalf("passage %q title %q, want %q", n.ID, n.Title, wantTitle)
		}
		// Every word of the passage is in the source bytes its span names.
		span := src[n.Span.Start:n.Span.End]
		for _, w := range strings.Fields(n.Text) {
			if !strings.Contains(span, w) {
				t.Fatalf("passage %q: %q not in its span %q", n.ID, w, span)
			}
		}
		if i > 0 && n.Span.Start < c.Nodes[i-1].Span.End {
			t.Fatalf("spans overlap at %q", n.ID)
		}
		sections = append(sections, n.Section)
	}
	want := []string{"", "Setup", "Rollback", "Rollback", "Escalation", "Escalation", "Escalation > Deep"}
	// The intro (3 words) is under MinWords, so Setup's first two
	// paragraphs join it (63, then 123 words ≤ 130) and the passage is named
	// by its first unit: the intro's empty path.
	if !slices.Equal(sections, want) {
		t.Fatalf("sections %q, want %q", sections, want)
	}
	if len(c.Edges) != 1 || c.Edges[0].Src != "h.md#7" || c.Edges[0].Dst != "h.md#3" { // #rollback opens the third
		t.Fatalf("in-page anchor link: %+v", c.Edges)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestFromFilesRoundTripsThroughWrite(t *testing.T) {
	root := writeFiles(t, wikiTree)
	c, _ := importTree(t, root, DefaultFilesOptions())
	out := filepath.Join(t.TempDir(), "c")
	if err := Write(out, c); err != nil {
		t.Fatal(err)
	}
	back, err := Load(out, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Nodes, c.Nodes) || !reflect.DeepEqual(back.Edges, c.Edges) {
		t.Fatalf("nodes or edges changed through nodes.jsonl:\n%+v\n%+v", back.Nodes, c.Nodes)
	}
	first, _ := os.ReadFile(filepath.Join(out, NodesFile))
	c2, _ := importTree(t, root, DefaultFilesOptions())
	out2 := filepath.Join(t.TempDir(), "c")
	if err := Write(out2, c2); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(filepath.Join(out2, NodesFile))
	if string(first) != string(second) {
		t.Fatal("two imports of the same folder differ")
	}
}

func TestFromFilesRefusesHostileFiles(t *testing.T) {
	cases := map[string]func(t *testing.T, root string) string{
		"binary": func(t *testing.T, root string) string {
			return put(t, root, "bin.md", "text\x00more")
		},
		"invalid UTF-8": func(t *testing.T, root string) string {
			return put(t, root, "bad.md", "ok\n\xff\xfe")
		},
		"too large": func(t *testing.T, root string) string {
			return put(t, root, "big.txt", strings.Repeat("x", 2000))
		},
		"symlink loop": func(t *testing.T, root string) string {
			p := filepath.Join(root, "loop.md")
			if err := os.Symlink("loop2.md", p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("loop.md", filepath.Join(root, "loop2.md")); err != nil {
				t.Fatal(err)
			}
			return p
		},
		"fifo": func(t *testing.T, root string) string {
			p := filepath.Join(root, "pipe.md")
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skip("no FIFOs here:", err)
			}
			return p
		},
		"device": func(t *testing.T, root string) string {
			p := filepath.Join(root, "zero.md")
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
			return p
		},
		"broken front-matter": func(t *testing.T, root string) string {
			return put(t, root, "fm.md", "---\ntitle: [unclosed\n---\nbody\n")
		},
		"unclosed front-matter": func(t *testing.T, root string) string {
			return put(t, root, "fm2.md", "---\ntitle: x\nbody\n")
		},
	}
	for name, make := range cases {
		t.Run(name, func(t *testing.T) {
			root := writeFiles(t, map[string]string{"good.md": "# Good\n\nfine text\n"})
			bad := make(t, root)
			o := DefaultFilesOptions()
			o.MaxFileBytes = 1000
			_, _, err := FromFiles(context.Background(), root, o)
			var fe *FileError
			if !errors.As(err, &fe) || fe.Path != bad {
				t.Fatalf("error %v does not name %s", err, bad)
			}
			o.SkipInvalid = true
			c, rep := importTree(t, root, o)
			if len(c.Nodes) != 1 || len(rep.Skipped) == 0 || rep.Skipped[0].Path != filepath.Base(bad) {
				t.Fatalf("skip-invalid: nodes %d, skipped %+v", len(c.Nodes), rep.Skipped)
			}
		})
	}
}

func TestFromFilesDoesNotFollowFolderLinks(t *testing.T) {
	root := writeFiles(t, map[string]string{"a/page.md": "# Page\n\ntext\n"})
	if err := os.Symlink("..", filepath.Join(root, "a", "up")); err != nil {
		t.Fatal(err)
	}
	c, _ := importTree(t, root, DefaultFilesOptions())
	if len(c.Nodes) != 1 {
		t.Fatalf("a folder link was followed: %d nodes", len(c.Nodes))
	}
}

func TestFromFilesUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	root := writeFiles(t, map[string]string{"a.md": "x", "b.md": "y"})
	p := filepath.Join(root, "b.md")
	if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
	_, _, err := FromFiles(context.Background(), root, DefaultFilesOptions())
	var fe *FileError
	if !errors.As(err, &fe) || fe.Path != p {
		t.Fatalf("error %v does not name %s", err, p)
	}
}

func put(t *testing.T, root, name, body string) string {
	t.Helper()
	p := filepath.Join(root, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFilesOptionsValidated(t *testing.T) {
	for _, mod := range []func(*FilesOptions){
		func(o *FilesOptions) { o.MaxWords = 0 },
		func(o *FilesOptions) { o.MinWords = -1 },
		func(o *FilesOptions) { o.MinWords = o.MaxWords + 1 },
		func(o *FilesOptions) { o.MaxFileBytes = 0 },
		func(o *FilesOptions) { o.Include = nil },
		func(o *FilesOptions) { o.Exclude = []string{"[bad"} },
	} {
		o := DefaultFilesOptions()
		mod(&o)
		if _, _, err := FromFiles(context.Background(), t.TempDir(), o); err == nil || !strings.Contains(err.Error(), "corpus: files") {
			t.Fatalf("options %+v: error %v", o, err)
		}
	}
}

func TestPathIDEscapes(t *testing.T) {
	if got := PathID("My Notes/50% #1.md"); got != "My%20Notes/50%25%20%231.md" {
		t.Fatalf("PathID = %q", got)
	}
}

func TestFromFilesTitleIsNotASectionHeading(t *testing.T) {
	c, _ := importTree(t, writeFiles(t, map[string]string{
		"cold-harbour.md": "Our generator vendor.\n\n## What they do\n\nThey service the generators.\n",
		"late.md":         "Some text first.\n\n# Late Title\n\nmore\n",
		"page.html":       "<h2>Section</h2><p>text</p><h1>Page</h1><p>more</p>",
	}), DefaultFilesOptions())
	for id, want := range map[string]string{"cold-harbour.md#1": "cold harbour", "late.md#1": "Late Title", "page.html#1": "Page > Section"} { // page.html: its first passage sits under the h2
		if n := nodeByID(t, c, id); n.Title != want {
			t.Fatalf("%s: title %q, want %q", id, n.Title, want)
		}
	}
}

// A block goldmark would take quadratic time or huge memory on is read as
// plain text; the rest of the file stays Markdown.
func TestFromFilesReadsPathologicalBlocksAsText(t *testing.T) {
	src := "# Page\n\n## Before\n\nSee [x](b.md).\n\n" + strings.Repeat("[a](", 3000) + "\n\n## After\n\nAlso [y](b.md).\n"
	o := DefaultFilesOptions()
	o.MinWords = 0
	c, rep := importTree(t, writeFiles(t, map[string]string{"a.md": src, "b.md": "# B\n\nb\n"}), o)
	var sections []string
	for _, n := range c.Nodes {
		if n.Doc == "a.md" {
			sections = append(sections, n.Section)
		}
	}
	// The bracket run is one word: it joins "See x." under Before, as text.
	if !slices.Equal(sections, []string{"Before", "After"}) || !strings.Contains(c.Nodes[0].Text, "See x.\n\n[a]([a](") {
		t.Fatalf("sections %q, first passage %.40q", sections, c.Nodes[0].Text)
	}
	if rep.Links != 2 {
		t.Fatalf("%d links, want the two outside the plain block", rep.Links)
	}
}

// Links of a unit cut into several passages go to the piece that holds
// them, each to one.
func TestSplitUnitLinksGoToOnePiece(t *testing.T) {
	var b strings.Builder
	b.WriteString("# P\n\n")
	for i := range 300 {
		fmt.Fprintf(&b, "w%d [[T%d]] ", i, i%3)
	}
	o := DefaultFilesOptions()
	o.MaxWords, o.MinWords = 100, 0
	files := map[string]string{"p.md": b.String(), "T0.md": "t", "T1.md": "t", "T2.md": "t"}
	c, rep := importTree(t, writeFiles(t, files), o)
	if rep.Links > 3*len(c.Nodes) || rep.Links < 6 {
		t.Fatalf("%d link edges from %d nodes", rep.Links, len(c.Nodes))
	}
}

func TestFrontMatterKeepsWhatWasWritten(t *testing.T) {
	meta, err := yamlMeta([]byte("ticket: 00123\nid: 9007199254740993\nn: 42\nx: 1.5\nbig: 123456789012345678901234567890\ninf: .inf\nhex: 0x1F\nok: true\nwhen: 2025-03-14\nempty:\nowner:\n  name: Ada\ntags: [a, 2, false]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"ticket": "00123", "id": "9007199254740993", "n": 42.0, "x": 1.5, "big": "123456789012345678901234567890",
		"inf": ".inf", "hex": "0x1F", "ok": true, "when": "2025-03-14", "empty": []any{}, "owner.name": "Ada", "tags": []any{"a", 2.0, false}}
	if !reflect.DeepEqual(meta, want) {
		t.Fatalf("meta\n got %#v\nwant %#v", meta, want)
	}
	for _, bad := range []string{
		"a.b: first\na:\n  b: second\n",               // two spellings of one name
		"list: [{a: 1}]\n",                            // a map in a list
		"? [a, b]\n: 1\n",                             // a name that is not text
		"- just\n- a list\n",                          // not fields
		"a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n", // lists of lists (an alias bomb's shape)
	} {
		if _, err := yamlMeta([]byte(bad)); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
	c, rep := importTree(t, writeFiles(t, map[string]string{"t.md": "+++\ntitle = \"x\"\n+++\nbody text\n"}), DefaultFilesOptions())
	if c.Nodes[0].Text != "body text" || c.Nodes[0].Meta != nil || rep.Files != 1 {
		t.Fatalf("TOML front-matter: %+v", c.Nodes[0])
	}
}

func TestFromFilesNamesAndLinksThatMisbehave(t *testing.T) {
	root := writeFiles(t, map[string]string{
		"a.md":    "# A\n\n[[Dup]] and [[dup]]\n",
		"d1.md":   "---\ntitle: Dup\n---\nx\n",
		"d2.md":   "---\ntitle: Dup\n---\ny\n",
		"in.md":   "inside",
		"\xfe.md": "one", "\xff.md": "two",
	})
	outside := filepath.Join(t.TempDir(), "secret.md")
	os.WriteFile(outside, []byte("secret"), 0o644)
	os.Symlink(outside, filepath.Join(root, "out.md"))
	os.Symlink("in.md", filepath.Join(root, "alias.md"))
	_, _, err := FromFiles(context.Background(), root, DefaultFilesOptions())
	if err == nil || !strings.Contains(err.Error(), "outside the folder") || !strings.Contains(err.Error(), "out.md") {
		t.Fatalf("a link out of the folder: %v", err)
	}
	o := DefaultFilesOptions()
	o.SkipInvalid = true
	c, rep := importTree(t, root, o)
	ids := map[string]bool{}
	for _, n := range c.Nodes {
		ids[n.ID] = true
	}
	if !ids["%FE.md#1"] || !ids["%FF.md#1"] || !ids["alias.md#1"] || ids["out.md#1"] {
		t.Fatalf("ids %v", ids)
	}
	if len(rep.Ambiguous) != 2 || rep.Ambiguous[0].Target != "Dup" {
		t.Fatalf("ambiguous %+v", rep.Ambiguous)
	}
}

func TestHTMLCharsetAndTitle(t *testing.T) {
	latin1 := "<html><head><meta charset=\"iso-8859-1\"><title>Caf\xe9</title></head><body><svg><title>icon</title></svg><p>cr\xe8me br\xfbl\xe9e</p></body></html>"
	c, _ := importTree(t, writeFiles(t, map[string]string{"p.html": latin1}), DefaultFilesOptions())
	if n := c.Nodes[0]; n.Title != "Café" || n.Text != "crème brûlée" {
		t.Fatalf("latin-1 page: %+v", n)
	}
	_, _, err := FromFiles(context.Background(), writeFiles(t, map[string]string{"q.html": "<p>caf\xe9</p>"}), DefaultFilesOptions())
	if err == nil || !strings.Contains(err.Error(), "no other charset declared") {
		t.Fatalf("undeclared non-UTF-8: %v", err)
	}
}

func TestGlobsReadLikeGitignore(t *testing.T) {
	for _, c := range []struct {
		glob, rel string
		want      bool
	}{
		{"[!a]*.md", "b.md", true}, {"[!a]*.md", "a.md", false},
		{"people/", "people", true}, {"/index.md", "index.md", true}, {"/index.md", "sub/index.md", false},
		{"./index.md", "index.md", true}, {"*.md", "README.MD", true}, {"notes/**/*.md", "notes/a/b/c.md", true},
	} {
		if got := matchAny([]string{c.glob}, c.rel, path.Base(c.rel)); got != c.want {
			t.Errorf("%q on %q: %v", c.glob, c.rel, got)
		}
	}
}

// Every heading's words stay in some passage's text, stubs included, and
// e-mail addresses and HTML table cells survive extraction.
func TestHeadingsAddressesAndCellsStay(t *testing.T) {
	md := "# FAQ\n\n## Will I lose logs?\n\nNo.\n\n## High CPU\n\n### Really high\n\nLower the batch.\n\nWrite to help@example.com today.\n\n## Trailing\n"
	html := "<html><head><title>Glossary</title></head><body><h1>Driftwood glossary</h1><table><tr><th>Metric</th><th>Meaning</th></tr><tr><td>spool_bytes</td><td>bytes held</td></tr></table></body></html>"
	for _, minWords := range []int{0, 40} {
		o := DefaultFilesOptions()
		o.MinWords = minWords
		c, _ := importTree(t, writeFiles(t, map[string]string{"faq.md": md, "g.html": html}), o)
		var all strings.Builder
		for _, n := range c.Nodes {
			all.WriteString(n.Text + "\n")
		}
		for _, want := range []string{"Will I lose logs?\nNo.", "High CPU\nReally high\nLower the batch.", "help@example.com", "Trailing", "spool_bytes bytes held"} {
			if !strings.Contains(all.String(), want) {
				t.Fatalf("min words %d: %q missing from\n%s", minWords, want, all.String())
			}
		}
		if g := nodeByID(t, c, "g.html#1"); g.Title != "Glossary" || g.Section != "" {
			t.Fatalf("a leading <h1> is the page's, not a section: %+v", g)
		}
	}
}
