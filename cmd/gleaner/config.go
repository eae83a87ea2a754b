package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

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
// naming the file and the flag.
func applyConfigFile(fl *pflag.FlagSet, path string) error {
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
		if err := setFromConfig(fl, name, v); err != nil {
			return fmt.Errorf("--config %s: %q: %w", path, name, err)
		}
	}
	return nil
}

func setFromConfig(fl *pflag.FlagSet, name string, v json.RawMessage) error {
	f := fl.Lookup(name)
	if f == nil || slices.Contains(notInConfig, name) {
		return errors.New("no such flag (gleaner serve --print-config lists them)")
	}
	if f.Changed { // given on the command line
		return nil
	}
	vals, err := configValues(v)
	if err != nil {
		return err
	}
	_, repeatable := f.Value.(pflag.SliceValue)
	if !repeatable && len(vals) != 1 {
		return fmt.Errorf("takes one value, got a list of %d", len(vals))
	}
	if repeatable {
		return f.Value.(pflag.SliceValue).Replace(vals)
	}
	if err := fl.Set(name, vals[0]); err != nil {
		return err
	}
	return nil
}

// configValues is a config value as flag text: a scalar as one value, a
// list as its elements.
func configValues(v json.RawMessage) ([]string, error) {
	var list []json.RawMessage
	if json.Unmarshal(v, &list) == nil {
		out := make([]string, 0, len(list))
		for _, e := range list {
			s, err := scalarText(e)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := scalarText(v)
	return []string{s}, err
}

func scalarText(v json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s, nil
	}
	var n json.Number
	if json.Unmarshal(v, &n) == nil {
		return n.String(), nil
	}
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return strconv.FormatBool(b), nil
	}
	return "", errors.New("want text, a number, a boolean or a list of them")
}

// printConfig writes every flag's value as a config file: lists for
// repeatable flags, text for the rest (read back as given).
func printConfig(w io.Writer, fl *pflag.FlagSet) error {
	out := map[string]any{}
	fl.VisitAll(func(f *pflag.Flag) {
		if slices.Contains(notInConfig, f.Name) {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			out[f.Name] = append([]string{}, sv.GetSlice()...)
			return
		}
		out[f.Name] = f.Value.String()
	})
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
