package corpus

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on a node's Meta, so one record cannot carry an unbounded table.
const (
	MaxMetaFields   = 64  // fields per node
	MaxMetaKeyBytes = 128 // bytes in a field name
	MaxMetaList     = 256 // values in one list field
)

// checkMeta validates a node's metadata: named fields holding a string, a
// finite number, a boolean or a list of those. JSON decoding yields
// float64 and []any; importers produce the same types.
func checkMeta(m map[string]any) error {
	if len(m) > MaxMetaFields {
		return fmt.Errorf("%w: %d meta fields, over the limit of %d", ErrMalformed, len(m), MaxMetaFields)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := checkMetaKey(k); err != nil {
			return err
		}
		if err := checkMetaValue(k, m[k]); err != nil {
			return err
		}
	}
	return nil
}

func checkMetaKey(k string) error {
	switch {
	case strings.TrimSpace(k) == "":
		return fmt.Errorf("%w: a meta field has an empty name", ErrMalformed)
	case len(k) > MaxMetaKeyBytes:
		return fmt.Errorf("%w: meta field name %.40q… is over %d bytes", ErrMalformed, k, MaxMetaKeyBytes)
	case !utf8.ValidString(k) || strings.ContainsFunc(k, unicode.IsControl):
		return fmt.Errorf("%w: meta field name %q holds a control character or invalid UTF-8", ErrMalformed, k)
	}
	return nil
}

func checkMetaValue(k string, v any) error {
	if list, ok := v.([]any); ok {
		if len(list) > MaxMetaList {
			return fmt.Errorf("%w: meta field %q holds %d values, over the limit of %d", ErrMalformed, k, len(list), MaxMetaList)
		}
		for _, e := range list {
			if err := checkMetaScalar(k, e); err != nil {
				return err
			}
		}
		return nil
	}
	return checkMetaScalar(k, v)
}

func checkMetaScalar(k string, v any) error {
	switch x := v.(type) {
	case string, bool:
		return nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%w: meta field %q: %v", ErrNotFinite, k, x)
		}
		return nil
	case nil:
		return fmt.Errorf("%w: meta field %q is null (leave it out instead)", ErrMalformed, k)
	}
	return fmt.Errorf("%w: meta field %q holds a %T; want a string, number, boolean or a list of them", ErrMalformed, k, v)
}

// metaBytes is the size of m's names and string values, counted against
// MaxRecordBytes with the text.
func metaBytes(m map[string]any) int {
	n := 0
	for k, v := range m {
		n += len(k)
		switch x := v.(type) {
		case string:
			n += len(x)
		case []any:
			for _, e := range x {
				if s, ok := e.(string); ok {
					n += len(s)
				}
				n += 8
			}
		default:
			n += 8
		}
	}
	return n
}

// checkProvenance validates a node's document id and source span.
func checkProvenance(n *Node) (field string, err error) {
	if n.Doc != "" {
		if why := badID(n.Doc); why != "" {
			return "doc", fmt.Errorf("%w: %s", ErrMalformed, why)
		}
	}
	if n.Span != nil && (n.Span.Start < 0 || n.Span.End < n.Span.Start) {
		return "span", fmt.Errorf("%w: span [%d, %d) is not a byte range", ErrMalformed, n.Span.Start, n.Span.End)
	}
	if strings.ContainsFunc(n.Section, unicode.IsControl) {
		return "section", fmt.Errorf("%w: section holds a control character", ErrMalformed)
	}
	return "", nil
}
