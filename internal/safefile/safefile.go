// Package safefile reads files a user names (models, tokenizers, caches)
// without trusting them: only regular files (a FIFO, a device or
// /dev/zero behind a symbolic link is refused before it is read), of at
// most a stated size, read in a bounded way.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is returned for a path that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// Read reads the regular file at path, refusing one over max bytes.
func Read(path string, max int64) ([]byte, error) {
	f, err := Open(path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: grew past %d bytes while read", path, max)
	}
	return b, nil
}

// Open opens the regular file at path for reading, refusing one over max
// bytes. The check is made on what was opened, so a file swapped for a
// FIFO after a stat is caught too; the open itself does not block.
func Open(path string, max int64) (*os.File, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, Kind(st.Mode()))
	}
	f, err := openNoBlock(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, Kind(st.Mode()))
	}
	if err == nil && st.Size() > max {
		err = fmt.Errorf("%s: %d bytes, over the limit of %d for this kind of file", path, st.Size(), max)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Limits by kind of file.
const (
	MaxConfig    = 4 << 20   // config.json and the like
	MaxTokenizer = 256 << 20 // tokenizer.json, vocabularies
	MaxWeights   = 64 << 30  // safetensors, ONNX: models are large, but a file's size is known
)

// Kind names what a file that is not regular is.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}
