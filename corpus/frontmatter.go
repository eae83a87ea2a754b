package corpus

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// frontMatter reads a leading "---" YAML block into the document's meta,
// title and aliases, and returns the rest with its offset in src. A "+++"
// (TOML) block is skipped with a note: its fields are not read.
func (d *sourceDoc) frontMatter(src []byte) ([]byte, int, error) {
	first, rest, ok := bytes.Cut(src, []byte("\n"))
	fence := string(bytes.TrimRight(first, " \t\r"))
	if !ok || (fence != "---" && fence != "+++") {
		return src, 0, nil
	}
	block, end, found := closeFrontMatter(rest, fence)
	if !found {
		return nil, 0, fmt.Errorf("%w: front-matter opened by %s on line 1 is never closed", ErrMalformed, fence)
	}
	off := len(first) + 1 + end
	if fence == "+++" {
		d.notes = append(d.notes, "TOML front-matter (+++) is skipped: its fields are not kept")
		return src[off:], off, nil
	}
	meta, err := yamlMeta(block)
	if err != nil {
		return nil, 0, fmt.Errorf("front-matter: %w", err)
	}
	d.meta = meta
	if t, ok := meta["title"].(string); ok {
		d.title = strings.TrimSpace(t)
	}
	d.aliases = metaStrings(meta["aliases"])
	return src[off:], off, nil
}

// closeFrontMatter finds the line closing a front-matter block ("---" or
// "..." for YAML, "+++" for TOML); end is the offset just past it.
func closeFrontMatter(rest []byte, fence string) (block []byte, end int, ok bool) {
	pos := 0
	for pos <= len(rest) {
		line, _, _ := bytes.Cut(rest[pos:], []byte("\n"))
		next := pos + len(line) + 1
		if t := string(bytes.TrimRight(line, " \t\r")); t == fence || (fence == "---" && t == "...") {
			return rest[:pos], min(next, len(rest)), true
		}
		pos = next
	}
	return nil, 0, false
}

// yamlMeta reads a YAML mapping as Meta, from its nodes rather than Go
// values, so a value keeps what was written: "00123" stays a string (not
// octal 83), an integer past 2^53 stays its digits, ".inf" stays text.
// Nested maps become dotted names; a name given twice is an error.
func yamlMeta(block []byte) (map[string]any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(block, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil // an empty block
	}
	root := resolveAlias(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: line %d: want fields (name: value), got a %s", ErrMalformed, root.Line, kindName(root))
	}
	out := map[string]any{}
	if err := flattenYAML("", root, out, 0); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, checkMeta(out)
}

// maxMetaDepth bounds nested maps (and so what aliases can expand to).
const maxMetaDepth = 8

func flattenYAML(prefix string, m *yaml.Node, out map[string]any, depth int) error {
	if depth > maxMetaDepth {
		return fmt.Errorf("%w: line %d: maps nested over %d deep", ErrMalformed, m.Line, maxMetaDepth)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], resolveAlias(m.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("%w: line %d: a field name that is a %s, not text", ErrMalformed, k.Line, kindName(k))
		}
		name := prefix + k.Value
		if v.Kind == yaml.MappingNode {
			if err := flattenYAML(name+".", v, out, depth+1); err != nil {
				return err
			}
			continue
		}
		val, err := yamlValue(v)
		if err != nil {
			return fmt.Errorf("%w: line %d: field %q: %v", ErrMalformed, v.Line, name, err)
		}
		if val == nil {
			// "acl:" with nothing is kept as an empty list: the field is
			// there (no group), not absent (public).
			val = []any{}
		}
		if _, dup := out[name]; dup {
			return fmt.Errorf("%w: line %d: field %q is given twice (a dotted name and a nested one meet)", ErrMalformed, k.Line, name)
		}
		if len(out) == MaxMetaFields {
			return fmt.Errorf("%w: more than %d fields", ErrMalformed, MaxMetaFields)
		}
		out[name] = val
	}
	return nil
}

// yamlValue is a scalar or a list of scalars as Meta holds them.
func yamlValue(v *yaml.Node) (any, error) {
	if v.Kind == yaml.ScalarNode {
		return yamlScalar(v)
	}
	if v.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("a %s; want a string, number, boolean, date or a list of them", kindName(v))
	}
	if len(v.Content) > MaxMetaList {
		return nil, fmt.Errorf("%d values, over the limit of %d", len(v.Content), MaxMetaList)
	}
	list := make([]any, 0, len(v.Content))
	for _, e := range v.Content {
		e = resolveAlias(e)
		if e.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("a list holding a %s; want a list of strings, numbers, booleans or dates", kindName(e))
		}
		x, err := yamlScalar(e)
		if err != nil {
			return nil, err
		}
		if x != nil {
			list = append(list, x)
		}
	}
	return list, nil
}

// yamlScalar converts by the scalar's tag, keeping the text where a number
// would change it.
func yamlScalar(v *yaml.Node) (any, error) {
	switch v.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := v.Decode(&b); err != nil {
			return nil, err
		}
		return b, nil
	case "!!int", "!!float":
		return yamlNumber(v.Value), nil
	case "!!timestamp":
		var t time.Time
		if err := v.Decode(&t); err != nil {
			return v.Value, nil
		}
		if t.Equal(t.Truncate(24*time.Hour)) && t.Location() == time.UTC {
			return t.Format(time.DateOnly), nil
		}
		return t.Format(time.RFC3339), nil
	}
	return v.Value, nil
}

// yamlNumber is a number written in plain decimal that a float64 holds
// exactly; anything else (leading zeros, 0x, .inf, 2^53 and past) is its
// text.
func yamlNumber(text string) any {
	digits := strings.TrimLeft(text, "+-")
	if len(digits) > 1 && digits[0] == '0' && digits[1] != '.' {
		return text
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(text, "_", ""), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || math.Abs(f) >= 1<<53 {
		return text
	}
	if i, err := strconv.ParseInt(text, 10, 64); err == nil && float64(i) != f {
		return text
	}
	return f
}

// resolveAlias follows an alias to what it names.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 8; i++ {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "map"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	case yaml.DocumentNode:
		return "document"
	}
	return "value"
}

// metaStrings reads a string or list-of-strings field.
func metaStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok && strings.TrimSpace(s) != "" {
				out = append(out, strings.TrimSpace(s))
			}
		}
		return out
	}
	return nil
}
