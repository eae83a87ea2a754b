package corpus

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gleaner-rag/gleaner/internal/excerpt"
)

// MaxRecordBytes bounds one record: a JSONL line, a line of a text corpus,
// or one node's text. A longer record is an error that names it, never a
// silent truncation; split long documents into passages (gleaner import
// graphrag-bench does) or raise the limit in code.
const MaxRecordBytes = 8 << 20

// utf8BOM is the byte-order mark some editors put at the start of a file.
var utf8BOM = []byte("\xef\xbb\xbf")

// checkRawRecord reports invalid UTF-8 and escaped NUL characters in one
// raw JSON record, naming the field they occur in. (encoding/json would
// replace invalid bytes with U+FFFD, so two distinct ids could collapse
// into one.)
func checkRawRecord(b []byte) (field string, err error) {
	if !utf8.Valid(b) {
		off := excerpt.InvalidUTF8At(b)
		return fieldAt(b, off), fmt.Errorf("%w: invalid UTF-8 at byte %d", ErrMalformed, off+1)
	}
	if off := escapedNUL(b); off >= 0 {
		return fieldAt(b, off), fmt.Errorf("%w: NUL character (\\u0000) at byte %d", ErrMalformed, off+1)
	}
	return "", nil
}

// escapedNUL finds a \u0000 escape (not an escaped backslash followed by
// the text "u0000").
func escapedNUL(b []byte) int {
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte(`\u0000`))
		if j < 0 {
			return -1
		}
		at := i + j
		backslashes := 0
		for k := at; k >= 0 && b[k] == '\\'; k-- {
			backslashes++
		}
		if backslashes%2 == 1 {
			return at
		}
		i = at + 1
	}
}

// fieldAt names the JSON key whose value holds byte off: the last `"key":`
// before it (good enough for gleaner's flat records).
func fieldAt(b []byte, off int) string {
	head := b[:min(off, len(b))]
	for end := bytes.LastIndex(head, []byte(`":`)); end > 0; end = bytes.LastIndex(head[:end], []byte(`":`)) {
		start := bytes.LastIndexByte(head[:end], '"')
		if start >= 0 && (start == 0 || head[start-1] != '\\') {
			return string(head[start+1 : end])
		}
	}
	return ""
}

// CheckID refuses an id that reading a corpus file refuses: empty, or
// holding white space or a control character (ErrMalformed). Writers
// that take ids from elsewhere (a live index's updates) check with it,
// so an index never holds an id its own files could not.
func CheckID(id string) error {
	if why := badID(id); why != "" {
		return fmt.Errorf("%w: %s", ErrMalformed, why)
	}
	return nil
}

// CheckRecordSize refuses a node over MaxRecordBytes, as reading a corpus
// file does (ErrMalformed).
func CheckRecordSize(n *Node) error {
	if b := len(n.Text) + len(n.Title) + metaBytes(n.Meta); b > MaxRecordBytes {
		return fmt.Errorf("%w: node %q holds %d bytes, over gleaner's limit of %d for one record (split it into passages)", ErrMalformed, n.ID, b, MaxRecordBytes)
	}
	return nil
}

// badID explains why id cannot be a node or query id, or returns "".
// Any Unicode white space is refused, since TREC run files split on it.
func badID(id string) string {
	switch {
	case strings.TrimSpace(id) == "":
		return "empty"
	case strings.ContainsFunc(id, unicode.IsSpace):
		return fmt.Sprintf("id %q contains white space (TREC run files cannot hold it)", id)
	case strings.ContainsFunc(id, unicode.IsControl):
		return fmt.Sprintf("id %q contains a control character", id)
	}
	return ""
}

// checkWeight validates an edge weight given in a file: finite, > 0 and
// representable as a float32 (the index stores float32), so no weight is
// changed on the way in. An absent weight means 1.
func checkWeight(w float64) error {
	switch {
	case math.IsNaN(w) || math.IsInf(w, 0):
		return fmt.Errorf("%w: %v", ErrNotFinite, w)
	case w <= 0:
		return fmt.Errorf("%w: weight %v; weights must be > 0 (omit the field for 1)", ErrMalformed, w)
	case w > math.MaxFloat32:
		return fmt.Errorf("%w: weight %v exceeds float32's range (%g), where the index stores it", ErrMalformed, w, math.MaxFloat32)
	case w < 0x1p-126:
		return fmt.Errorf("%w: weight %v is below float32's smallest normal number (%g) and would be stored as 0", ErrMalformed, w, 0x1p-126)
	}
	return nil
}
