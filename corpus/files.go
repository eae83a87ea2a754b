package corpus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html/charset"

	"github.com/gleaner-rag/gleaner/internal/excerpt"
	"github.com/gleaner-rag/gleaner/internal/safefile"
)

// LinksKind is the edge kind of links between imported files.
const LinksKind = "links"

// FilesOptions configures FromFiles. Start from DefaultFilesOptions: a
// zero MaxWords or MaxFileBytes is an error, not a default.
type FilesOptions struct {
	// Include and Exclude are globs on the path relative to the root
	// (slash-separated). A pattern without '/' matches a file or folder
	// name anywhere; one with '/' matches the whole path, '**' standing
	// for any number of folders. A file is read when it matches some
	// Include and no Exclude; an excluded folder is not entered.
	Include, Exclude []string
	// Hidden reads files and folders whose names start with '.' (skipped
	// by default: .git, .obsidian).
	Hidden bool
	// MaxWords bounds a passage; documents are cut at headings, then
	// paragraphs, then words (≥ 1).
	MaxWords int
	// MinWords: a heading starts a new passage only once the open one
	// holds this many words, so a stub section joins the next (≥ 0; 0: every
	// heading starts a passage).
	MinWords int
	// MaxFileBytes refuses larger files (≥ 1).
	MaxFileBytes int64
	// SkipInvalid reports bad files (binary, invalid UTF-8, too large,
	// unreadable, not a regular file, broken front-matter) in the report
	// and the log and leaves them out; otherwise the first is an error.
	SkipInvalid bool
	// Logger receives warnings and progress; nil discards them.
	Logger *slog.Logger
}

// DefaultFilesOptions reads Markdown, HTML and plain text into passages of
// at most 200 words, a new one at every heading.
func DefaultFilesOptions() FilesOptions {
	return FilesOptions{
		Include:      []string{"*.md", "*.markdown", "*.mdx", "*.txt", "*.text", "*.html", "*.htm"},
		MaxWords:     200,
		MinWords:     0,
		MaxFileBytes: 16 << 20,
	}
}

// Validate checks the options.
func (o FilesOptions) Validate() error {
	switch {
	case len(o.Include) == 0:
		return fmt.Errorf("corpus: files: no include patterns")
	case o.MaxWords < 1:
		return fmt.Errorf("corpus: files: max words per passage must be ≥ 1, got %d", o.MaxWords)
	case o.MinWords < 0 || o.MinWords > o.MaxWords:
		return fmt.Errorf("corpus: files: min words must be in [0, max words %d], got %d", o.MaxWords, o.MinWords)
	case o.MaxFileBytes < 1:
		return fmt.Errorf("corpus: files: max file bytes must be ≥ 1, got %d", o.MaxFileBytes)
	}
	for _, p := range slices.Concat(o.Include, o.Exclude) {
		if g, _ := normalizeGlob(p); g == "" {
			return fmt.Errorf("corpus: files: empty pattern %q", p)
		} else if _, err := path.Match(strings.ReplaceAll(g, "**", "*"), ""); err != nil {
			return fmt.Errorf("corpus: files: bad pattern %q", p)
		}
	}
	return nil
}

// FilesReport says what FromFiles read and what it could not use.
type FilesReport struct {
	Files    int           // documents read
	Ignored  int           // files matching no include pattern
	Passages int           // nodes made
	Links    int           // links edges made (distinct passage pairs)
	External int           // links to URLs, not files (dropped)
	Dangling []Dangling    // links to files that are not in the corpus
	Skipped  []SkippedFile // bad files left out (SkipInvalid)
	// NotFollowed are symbolic links to folders, which are not entered.
	NotFollowed []string
	// Ambiguous are wiki links whose name fits several documents; each
	// went to the first in path order.
	Ambiguous []Dangling
	NotLinked int // same-passage links, dropped
}

// Dangling is a link whose target is not a document of the corpus.
type Dangling struct {
	From   string `json:"from"`   // the linking document's id
	Line   int    `json:"line"`   // 1-based line of the link, 0 when unknown
	Target string `json:"target"` // the link as written
	// Path is where a relative link points under the root, when it is not
	// Target itself ("../x.md" from "a/b.md" is "x.md").
	Path string `json:"path,omitempty"`
}

// SkippedFile is a file left out and why.
type SkippedFile struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// FileError is a file FromFiles cannot read, named by its path.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string {
	return excerpt.Of(e.Path, 1024) + ": " + excerpt.Of(e.Err.Error(), 2048)
}
func (e *FileError) Unwrap() error { return e.Err }

// FromFiles imports a folder of documents (docs/importing.md): every
// Markdown, HTML and text file under root becomes a document whose id is
// its path relative to root; documents are cut into passages that keep
// the document's title and heading path; links between files become
// LinksKind edges between the passages holding them and the passages
// they point to. Files are read in lexical path order, so the same folder
// gives the same corpus. Nothing is written: see Write.
func FromFiles(ctx context.Context, root string, o FilesOptions) (*Corpus, *FilesReport, error) {
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	st, err := os.Stat(root)
	if err != nil {
		return nil, nil, err
	}
	if !st.IsDir() {
		return nil, nil, fmt.Errorf("corpus: %s is not a folder", root)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, nil, err
	}
	im := &importer{root: root, realRoot: realRoot, o: o, log: ReadOptions{Logger: o.Logger}.logger(), rep: &FilesReport{}}
	if err := im.walk(ctx); err != nil {
		return nil, nil, err
	}
	if len(im.docs) == 0 {
		return nil, nil, fmt.Errorf("corpus: %s holds no documents matching %v and no exclude %v (%d other files ignored, %d bad files skipped)", root, o.Include, o.Exclude, im.rep.Ignored, len(im.rep.Skipped))
	}
	c := im.corpus()
	return c, im.rep, nil
}

// importer holds one FromFiles run.
type importer struct {
	root     string
	realRoot string // root with its symbolic links resolved
	o        FilesOptions
	log      *slog.Logger
	rep      *FilesReport
	docs     []*sourceDoc
}

func (im *importer) walk(ctx context.Context) error {
	return filepath.WalkDir(im.root, func(p string, d fs.DirEntry, err error) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		rel, _ := filepath.Rel(im.root, p)
		rel = filepath.ToSlash(rel)
		if err != nil {
			return im.bad(rel, err)
		}
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			if im.excluded(rel, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if im.excluded(rel, d.Name()) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return im.symlink(p, rel, d.Name())
		}
		if !matchAny(im.o.Include, rel, d.Name()) {
			im.rep.Ignored++
			return nil
		}
		return im.readFile(p, rel)
	})
}

func (im *importer) excluded(rel, name string) bool {
	return (!im.o.Hidden && strings.HasPrefix(name, ".")) || matchAny(im.o.Exclude, rel, name)
}

// bad reports a file that cannot be used: an error, or with SkipInvalid a
// warning and an entry in the report.
func (im *importer) bad(rel string, err error) error {
	if !im.o.SkipInvalid {
		return &FileError{Path: filepath.Join(im.root, filepath.FromSlash(rel)), Err: err}
	}
	im.log.Warn("import: skipping file", "path", rel, "reason", err.Error())
	im.rep.Skipped = append(im.rep.Skipped, SkippedFile{Path: rel, Reason: err.Error()})
	return nil
}

// symlink reads a symbolic link's file when it stays inside the folder.
// Links to folders are not followed (so no loop can trap the walk) and are
// listed; a link to a file outside the folder is a bad file: the folder is
// what the user chose to import.
func (im *importer) symlink(p, rel, name string) error {
	target, err := filepath.EvalSymlinks(p) // a loop fails here ("too many levels of symbolic links")
	if err != nil {
		if !matchAny(im.o.Include, rel, name) {
			im.rep.Ignored++
			return nil
		}
		return im.bad(rel, fmt.Errorf("symbolic link: %w", err))
	}
	if st, err := os.Stat(target); err == nil && st.IsDir() {
		im.log.Warn("import: not following a symbolic link to a folder", "path", rel, "target", target)
		im.rep.NotFollowed = append(im.rep.NotFollowed, rel)
		return nil
	}
	if !matchAny(im.o.Include, rel, name) {
		im.rep.Ignored++
		return nil
	}
	if up, err := filepath.Rel(im.realRoot, target); err != nil || up == ".." || strings.HasPrefix(up, "../") {
		return im.bad(rel, fmt.Errorf("a symbolic link to %s, outside the folder being imported", target))
	}
	return im.readFile(p, rel)
}

func (im *importer) readFile(p, rel string) error {
	src, err := readSource(p, im.o.MaxFileBytes)
	if err != nil {
		return im.bad(rel, err)
	}
	doc, err := parseSource(rel, src)
	if err != nil {
		return im.bad(rel, err)
	}
	if len(doc.units) == 0 && doc.title == "" {
		im.log.Warn("import: file holds no text; left out", "path", rel)
		return nil
	}
	for _, n := range doc.notes {
		im.log.Warn("import: "+n, "path", rel)
	}
	doc.rel, doc.src = rel, src
	im.docs = append(im.docs, doc)
	if im.rep.Files++; im.rep.Files%1000 == 0 {
		im.log.Info("import: reading files", "files", im.rep.Files)
	}
	return nil
}

// readSource reads a regular file of at most max bytes and checks that it
// is text: valid UTF-8 with no NUL byte.
func readSource(p string, max int64) ([]byte, error) {
	f, err := safefile.Open(p, max) // regular files only, size checked on what was opened
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == p {
		err = pe.Err // the FileError names the path
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src, err := readBounded(f, max)
	if err != nil {
		return nil, err
	}
	if isHTML(p) && !utf8.Valid(src) {
		if src, err = transcodeHTML(src); err != nil {
			return nil, err
		}
	}
	return checkText(src)
}

// readBounded reads at most max bytes in chunks, stopping at the first
// chunk with a NUL byte: a huge binary file is refused without reading it
// all.
func readBounded(r io.Reader, max int64) ([]byte, error) {
	var src []byte
	buf := make([]byte, 1<<20)
	for {
		n, err := r.Read(buf)
		if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
			at := len(src) + i
			src = append(src, buf[:n]...)
			return nil, fmt.Errorf("%w: binary content (a NUL byte on line %d, byte %d)", ErrMalformed, lineAt(src, at), at+1)
		}
		src = append(src, buf[:n]...)
		if int64(len(src)) > max {
			return nil, fmt.Errorf("grew past the limit of %d bytes while read", max)
		}
		if err == io.EOF {
			return src, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func isHTML(p string) bool {
	ext := strings.ToLower(filepath.Ext(p))
	return ext == ".html" || ext == ".htm"
}

// transcodeHTML decodes an HTML file that is not UTF-8 by the charset it
// declares (<meta charset>, or a byte-order mark); its spans are then
// offsets of the UTF-8 form.
func transcodeHTML(src []byte) ([]byte, error) {
	head := bytes.ToLower(src[:min(len(src), 1024)]) // where a <meta charset> must be
	enc, name, certain := charset.DetermineEncoding(src, "")
	declared := certain || bytes.Contains(head, []byte("charset"))
	if !declared || name == "utf-8" || name == "" {
		i := excerpt.InvalidUTF8At(src)
		return nil, fmt.Errorf("%w: invalid UTF-8 on line %d, byte %d, and no other charset declared", ErrMalformed, lineAt(src, i), i+1)
	}
	out, err := enc.NewDecoder().Bytes(src)
	if err != nil {
		return nil, fmt.Errorf("%w: decoding its declared charset %s: %v", ErrMalformed, name, err)
	}
	return out, nil
}

// checkText refuses binary and non-UTF-8 content, naming the place, and
// drops a byte-order mark.
func checkText(src []byte) ([]byte, error) {
	src = bytes.TrimPrefix(src, utf8BOM)
	if i := bytes.IndexByte(src, 0); i >= 0 {
		return nil, fmt.Errorf("%w: binary content (a NUL byte on line %d, byte %d)", ErrMalformed, lineAt(src, i), i+1)
	}
	if !utf8.Valid(src) {
		i := excerpt.InvalidUTF8At(src)
		return nil, fmt.Errorf("%w: invalid UTF-8 on line %d, byte %d", ErrMalformed, lineAt(src, i), i+1)
	}
	return src, nil
}

// lineAt is the 1-based line holding byte i.
func lineAt(src []byte, i int) int { return bytes.Count(src[:min(i, len(src))], []byte("\n")) + 1 }

// parseSource extracts a document by its file type.
func parseSource(rel string, src []byte) (*sourceDoc, error) {
	var d *sourceDoc
	switch strings.ToLower(path.Ext(rel)) {
	case ".html", ".htm":
		d = readHTML(src)
	case ".txt", ".text":
		d = readText(src)
	default:
		var err error
		if d, err = readMarkdown(src); err != nil {
			return nil, err
		}
	}
	if d.title == "" {
		d.title = titleFromName(rel)
	}
	return d, nil
}

// titleFromName is a file's name without extension, '-' and '_' read as
// spaces.
func titleFromName(rel string) string {
	base := strings.TrimSuffix(path.Base(rel), path.Ext(rel))
	return strings.Join(strings.FieldsFunc(base, func(r rune) bool { return r == '-' || r == '_' || unicode.IsSpace(r) }), " ")
}

// matchAny reports whether rel (or its base name, for patterns without
// '/') matches one of the globs, as .gitignore reads them: a leading "/"
// or "./" anchors a pattern at the root, a trailing "/" is dropped,
// "[!…]" negates a class. Names are also tried in lower case, so "*.md"
// takes README.MD.
func matchAny(globs []string, rel, name string) bool {
	for _, g := range globs {
		g, anchored := normalizeGlob(g)
		for _, cand := range [][2]string{{rel, name}, {strings.ToLower(rel), strings.ToLower(name)}} {
			if !anchored && !strings.Contains(g, "/") {
				if ok, _ := path.Match(g, cand[1]); ok {
					return true
				}
				continue
			}
			if globMatch(strings.Split(g, "/"), strings.Split(cand[0], "/")) {
				return true
			}
		}
	}
	return false
}

// normalizeGlob rewrites a .gitignore-style pattern for path.Match.
func normalizeGlob(g string) (string, bool) {
	anchored := strings.HasPrefix(g, "/") || strings.HasPrefix(g, "./")
	g = strings.TrimPrefix(strings.TrimPrefix(g, "./"), "/")
	g = strings.TrimSuffix(g, "/")
	return strings.ReplaceAll(g, "[!", "[^"), anchored
}

// globMatch matches path segments, "**" standing for zero or more.
func globMatch(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if globMatch(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// PathID is the document id of a file at rel (slash-separated): rel with
// '%', '#', white space, control characters and bytes that are not UTF-8
// percent-encoded, since ids hold no space and '#' separates a passage
// number.
func PathID(rel string) string {
	var b strings.Builder
	for i, r := range rel {
		if r == utf8.RuneError && !strings.HasPrefix(rel[i:], "\uFFFD") { // an invalid byte: two names must not meet in U+FFFD
			fmt.Fprintf(&b, "%%%02X", rel[i])
			continue
		}
		if r == '%' || r == '#' || unicode.IsSpace(r) || unicode.IsControl(r) {
			var buf [utf8.UTFMax]byte
			for _, c := range buf[:utf8.EncodeRune(buf[:], r)] {
				fmt.Fprintf(&b, "%%%02X", c)
			}
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
