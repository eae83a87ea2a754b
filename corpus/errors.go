package corpus

import (
	"errors"
	"fmt"
)

// RecordError locates a problem in an input file: the file, the 1-based line
// (or record number for JSON arrays) and the field. Line 0 means the problem
// concerns the file as a whole.
type RecordError struct {
	File  string
	Line  int
	Field string
	Err   error
}

func (e *RecordError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: field %q: %v", loc, e.Field, e.Err)
	}
	return fmt.Sprintf("%s: %v", loc, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// Sentinel causes, for errors.Is.
var (
	ErrMissing   = errors.New("missing or empty")
	ErrDuplicate = errors.New("duplicate id")
	ErrUnknownID = errors.New("unknown node id")
	ErrNotFinite = errors.New("value is NaN or infinite")
	ErrMalformed = errors.New("malformed record")
)

func recErr(file string, line int, field string, err error) *RecordError {
	return &RecordError{File: file, Line: line, Field: field, Err: err}
}
