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
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("grew past %d bytes while read", max)}
	}
	return b, nil
}

// Open opens the regular file at path for reading, refusing one over max
// bytes. The check is made on what was opened, so a file swapped for a
// FIFO after a stat is caught too; the open itself does not block. Its
// own refusals are *fs.PathError (Op "read") naming path.
func Open(path string, max int64) (*os.File, error) {
	refuse := func(err error) error { return &fs.PathError{Op: "read", Path: path, Err: err} }
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, refuse(fmt.Errorf("%w (%s)", ErrNotRegular, Kind(st.Mode())))
	}
	f, err := openNoBlock(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	switch {
	case err != nil:
	case !st.Mode().IsRegular():
		err = refuse(fmt.Errorf("%w (%s)", ErrNotRegular, Kind(st.Mode())))
	case st.Size() > max:
		err = refuse(fmt.Errorf("%d bytes, over the limit of %d for this kind of file", st.Size(), max))
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

// SyncDir syncs a folder, so that the names created or renamed in it
// survive a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
