package corpus

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
)

// eachJSONL decodes every non-blank line of path into a fresh T and calls fn
// with the 1-based line number. Malformed JSON stops the read with a
// RecordError naming the line.
func eachJSONL[T any](path string, fn func(line int, rec *T) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return decodeJSONL(f, path, fn)
}

func decodeJSONL[T any](r io.Reader, name string, fn func(line int, rec *T) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4<<10), MaxRecordBytes)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			b = bytes.TrimPrefix(b, utf8BOM)
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		if field, err := checkRawRecord(b); err != nil {
			return recErr(name, line, field, err)
		}
		var rec T
		if err := json.Unmarshal(b, &rec); err != nil {
			return recErr(name, line, jsonField(err), fmt.Errorf("%w: %v", ErrMalformed, jsonMessage(err)))
		}
		if err := fn(line, &rec); err != nil {
			return err
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return recErr(name, line+1, "", fmt.Errorf("%w: record longer than %d bytes, gleaner's limit for one record (split long documents into passages)", ErrMalformed, MaxRecordBytes))
	}
	if err := sc.Err(); err != nil {
		return recErr(name, line+1, "", fmt.Errorf("%w: %v", ErrMalformed, err))
	}
	return nil
}

// jsonMessage says what a type error found, without Go's type names.
func jsonMessage(err error) string {
	te, ok := err.(*json.UnmarshalTypeError)
	if !ok {
		return err.Error()
	}
	want := map[reflect.Kind]string{reflect.Slice: "a list", reflect.Map: "an object", reflect.String: "text",
		reflect.Bool: "true or false", reflect.Struct: "an object"}[te.Type.Kind()]
	if want == "" {
		want = "a number"
	}
	return fmt.Sprintf("want %s, got %s", want, te.Value)
}

// jsonField extracts the offending field from a type error, if any.
func jsonField(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		return te.Field
	}
	return ""
}

// writeJSONL writes records one per line to path atomically: a temporary file
// in the same directory is renamed into place only after a successful sync.
func writeJSONL[T any](path string, recs []T) (err error) {
	return WriteFileAtomic(path, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		for i := range recs {
			if err := enc.Encode(&recs[i]); err != nil {
				return fmt.Errorf("record %d: %w", i+1, err)
			}
		}
		return bw.Flush()
	})
}

// WriteFileAtomic creates path by writing a temporary sibling with fill,
// syncing it and renaming it into place, readable by all like any file
// gleaner writes (0644; os.CreateTemp makes 0600). On any error the
// temporary file is removed and path is left untouched.
func WriteFileAtomic(path string, fill func(io.Writer) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = fill(tmp); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
