package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gleaner-rag/gleaner/internal/jsonfile"
	"github.com/gleaner-rag/gleaner/internal/safefile"
)

// maxConfigBytes bounds a --config file.
const maxConfigBytes = 1 << 20

// notInConfig are the flags a config file does not set: the ones that
// choose the file or what to do with it.
var notInConfig = []string{"config", "print-config", "help"}

// applyConfigFile sets the flags a JSON config file gives ({"flag-name":
// value}, a value being text, a number, a boolean or a list for a
// repeatable flag), except those given on the command line, which win.
// An unknown flag, a value of the wrong kind or a bad value is an error
// naming the file and the flag. A global flag (one of global) is refused
// with a word on where it goes: it acts before the command runs.
func applyConfigFile(fl, global *pflag.FlagSet, path string) error {
	if path == "" {
		return nil
	}
	b, err := safefile.Read(path, maxConfigBytes)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := jsonfile.Decode(b, &raw); err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	for name, v := range raw {
		if global.Lookup(name) != nil && fl.Lookup(name) == nil {
			return fmt.Errorf("--config %s: %q is a global flag; it acts before serve reads the file, so give it on the command line (gleaner --%s … serve)", path, name, name)
		}
		if err := setFromConfig(fl, name, v); err != nil {
			return fmt.Errorf("--config %s: %q: %w", path, name, err)
		}
	}
	return nil
}

// The JSON kind each flag type takes in a config file.
var (
	numberFlags = []string{"int", "int64", "int32", "uint", "float64", "float32", "float"}
	listFlags   = []string{"stringArray", "stringSlice", "ints", "strings"}
)

func setFromConfig(fl *pflag.FlagSet, name string, v json.RawMessage) error {
	f := fl.Lookup(name)
	if f == nil || slices.Contains(notInConfig, name) {
		return errors.New("no such flag (gleaner serve --print-config lists them)")
	}
	if f.Changed { // given on the command line
		return nil
	}
	vals, err := configValues(f.Value.Type(), v)
	if err != nil {
		return err
	}
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return sv.Replace(vals)
	}
	if slices.Contains(listFlags, f.Value.Type()) { // a setting's list: comma-separated on the command line
		return fl.Set(name, strings.Join(vals, ","))
	}
	return fl.Set(name, vals[0])
}

// configValues is a config value as flag text, refusing a JSON kind the
// flag's type does not take: a number for a number flag, a boolean for a
// switch, a list for a list flag, text for the rest (durations: "30s").
func configValues(typ string, v json.RawMessage) ([]string, error) {
	want := "text"
	switch {
	case slices.Contains(numberFlags, typ):
		want = "a number"
	case typ == "bool":
		want = "true or false"
	case slices.Contains(listFlags, typ):
		want = "a list"
	}
	if want == "a list" {
		var list []json.RawMessage
		if json.Unmarshal(v, &list) != nil {
			return nil, fmt.Errorf("want a list (a %s flag)", typ)
		}
		out := make([]string, 0, len(list))
		for _, e := range list {
			s, err := scalarText(e, map[string]string{"ints": "a number"}[typ])
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := scalarText(v, want)
	if err != nil {
		return nil, fmt.Errorf("%w (a %s flag)", err, typ)
	}
	return []string{s}, nil
}

// scalarText is a JSON scalar of the wanted kind as text ("" wants text).
func scalarText(v json.RawMessage, want string) (string, error) {
	switch want {
	case "a number":
		var inf string // a float setting may be "inf" or "-inf", as on the command line
		if json.Unmarshal(v, &inf) == nil && slices.Contains([]string{"inf", "+inf", "-inf"}, strings.ToLower(inf)) {
			return inf, nil
		}
		var n json.Number // a JSON string decodes into a Number too: refuse it first
		dec := json.NewDecoder(strings.NewReader(string(v)))
		dec.UseNumber()
		if strings.HasPrefix(strings.TrimSpace(string(v)), `"`) || dec.Decode(&n) != nil || n == "" {
			return "", fmt.Errorf("want a number, got %s", clipJSON(v))
		}
		return n.String(), nil
	case "true or false":
		var b bool
		if json.Unmarshal(v, &b) != nil {
			return "", fmt.Errorf("want true or false, got %s", clipJSON(v))
		}
		return strconv.FormatBool(b), nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", fmt.Errorf("want text, got %s", clipJSON(v))
	}
	return s, nil
}

func clipJSON(v json.RawMessage) string {
	if len(v) > 40 {
		return string(v[:40]) + "…"
	}
	return string(v)
}

// printConfig writes every flag's value as a config file, each of the
// JSON kind it takes (numbers, booleans, lists, text). Method settings
// appear only when set: unset, each method uses its own default.
func printConfig(w io.Writer, fl *pflag.FlagSet) error {
	out := map[string]any{}
	var bad []string
	fl.VisitAll(func(f *pflag.Flag) {
		if slices.Contains(notInConfig, f.Name) {
			return
		}
		typ, text := f.Value.Type(), f.Value.String()
		_, setting := f.Value.(*textValue)
		switch sv, isSlice := f.Value.(pflag.SliceValue); {
		case setting && !f.Changed:
		case isSlice:
			out[f.Name] = append([]string{}, sv.GetSlice()...)
		case slices.Contains(listFlags, typ):
			out[f.Name] = listOf(typ, text)
		case slices.Contains(numberFlags, typ) && json.Valid([]byte(text)):
			out[f.Name] = json.Number(text)
		case slices.Contains(numberFlags, typ) && !slices.Contains([]string{"inf", "+inf", "-inf"}, strings.ToLower(text)):
			bad = append(bad, "--"+f.Name+" "+text) // NaN: a config file could not give it back
		case slices.Contains(numberFlags, typ):
			out[f.Name] = text // ±inf: read back as on the command line
		case typ == "bool":
			out[f.Name] = text == "true"
		default:
			out[f.Name] = text
		}
	})
	if len(bad) > 0 {
		return fmt.Errorf("%s: not a number a config file can hold", strings.Join(bad, ", "))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// listOf is a setting's comma-separated text as a JSON list.
func listOf(typ, text string) any {
	parts := []string{}
	if text != "" {
		parts = strings.Split(text, ",")
	}
	if typ != "ints" {
		return parts
	}
	nums := make([]json.Number, len(parts))
	for i, p := range parts {
		nums[i] = json.Number(strings.TrimSpace(p))
	}
	return nums
}
