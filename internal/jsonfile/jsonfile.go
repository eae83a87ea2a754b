// Package jsonfile reads the JSON files a user writes by hand (profiles,
// keys, configurations) strictly, and replaces such files whole.
package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gleaner-rag/gleaner/internal/excerpt"
)

// NoRepeatedKeys refuses JSON with an object that gives a key twice
// (encoding/json would keep the last silently) or nests over 64 deep.
func NoRepeatedKeys(b []byte) error {
	return noRepeatedKeys(json.NewDecoder(bytes.NewReader(b)), 0)
}

func noRepeatedKeys(dec *json.Decoder, depth int) error {
	if depth > 64 {
		return errors.New("nested over 64 deep")
	}
	t, err := dec.Token()
	if err != nil {
		return err
	}
	switch t {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := k.(string)
			if seen[key] {
				return fmt.Errorf("key %q is given twice", excerpt.Of(key, 64))
			}
			seen[key] = true
			if err := noRepeatedKeys(dec, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		for dec.More() {
			if err := noRepeatedKeys(dec, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	return err
}

// Decode reads one JSON value from b into v strictly: unknown fields,
// repeated keys and trailing data are errors.
func Decode(b []byte, v any) error {
	if err := NoRepeatedKeys(b); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// Replace writes b to path whole: to a temporary file beside it, synced,
// given mode, then renamed over path, so a reader sees the old file or
// the new one and a crash leaves the old one.
func Replace(path string, b []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // gone once renamed
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), mode)
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
