package corpus

import (
	"io"
	"log/slog"
)

// ReadOptions controls how readers treat bad records.
type ReadOptions struct {
	// SkipInvalid turns record-level problems (empty text, unknown gold ids,
	// dangling edges) into logged warnings and drops the record. Malformed
	// JSON and duplicate ids are always errors: skipping them would silently
	// change what an id means.
	SkipInvalid bool
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
}

func (o ReadOptions) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o.Logger
}

// reject returns err, or logs it and returns nil when skipping is allowed.
func (o ReadOptions) reject(err *RecordError) error {
	if !o.SkipInvalid {
		return err
	}
	o.logger().Warn("skipping record", "file", err.File, "line", err.Line, "field", err.Field, "reason", err.Err.Error())
	return nil
}
