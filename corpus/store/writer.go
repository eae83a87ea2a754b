package store

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"github.com/gleaner-rag/gleaner/internal/safefile"
)

// Writer fills a temporary folder; Commit renames it into place and Abort
// removes it. A Writer is not safe for concurrent use.
type Writer struct {
	final, tmp string
	files      map[string]FileInfo
	done       bool
	release    func() // drops the lock on tmp (Hold)
}

// NewWriter starts a store that will appear at dir on Commit. It refuses at
// once a dir that holds something other than a gleaner index (CheckTarget).
func NewWriter(dir string) (*Writer, error) {
	dir = Target(dir)
	if err := CheckTarget(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp's 0700 would hide the store from a server run as another user
		os.RemoveAll(tmp)
		return nil, err
	}
	return &Writer{final: dir, tmp: tmp, files: map[string]FileInfo{}, release: Hold(tmp)}, nil
}

// asBytes views a numeric slice as its little-endian bytes (gleaner refuses
// to open stores on big-endian hosts, see Open).
func asBytes[T float32 | uint32 | int32 | int64](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// F32, U32, I32, I64 and Bytes write one array file each.
func (w *Writer) F32(name string, s []float32) error { return w.raw(name, KindF32, asBytes(s)) }
func (w *Writer) U32(name string, s []uint32) error  { return w.raw(name, KindU32, asBytes(s)) }
func (w *Writer) I32(name string, s []int32) error   { return w.raw(name, KindI32, asBytes(s)) }
func (w *Writer) I64(name string, s []int64) error   { return w.raw(name, KindI64, asBytes(s)) }
func (w *Writer) Bytes(name string, b []byte) error  { return w.raw(name, KindBytes, b) }

// JSON writes v as an indented JSON document.
func (w *Writer) JSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("store: %s: %w", name, err)
	}
	return w.raw(name, KindJSON, b)
}

// Stream writes a file produced incrementally by fill.
func (w *Writer) Stream(name, kind string, fill func(io.Writer) error) error {
	f, err := os.Create(filepath.Join(w.tmp, name))
	if err != nil {
		return err
	}
	h := crc32.New(castagnoli)
	cw := &countWriter{w: io.MultiWriter(f, h)}
	bw := bufio.NewWriterSize(cw, 1<<20)
	err = fill(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("store: writing %s: %w", name, err)
	}
	w.files[name] = FileInfo{Kind: kind, Bytes: cw.n, CRC32C: h.Sum32()}
	return nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (w *Writer) raw(name, kind string, b []byte) error {
	return w.Stream(name, kind, func(out io.Writer) error {
		_, err := out.Write(b)
		return err
	})
}

// Commit writes the manifest, syncs the folder and renames it to its final
// place, replacing an existing store there only after the new one is
// complete.
func (w *Writer) Commit(meta map[string]any) error {
	if w.done {
		return fmt.Errorf("store: writer already finished")
	}
	m := Manifest{Format: FormatName, Version: FormatVersion, ByteOrder: "little",
		Created: time.Now().UTC().Format(time.RFC3339), Meta: meta, Files: w.files}
	b, err := sealManifest(m)
	if err != nil {
		w.Abort()
		return err
	}
	if err := writeSynced(filepath.Join(w.tmp, ManifestFile), b); err != nil {
		w.Abort()
		return err
	}
	if err := safefile.SyncDir(w.tmp); err != nil {
		w.Abort()
		return err
	}
	return w.swapIn()
}

func (w *Writer) swapIn() error {
	w.done = true
	defer w.release()
	if err := Promote(w.tmp, w.final); err != nil {
		os.RemoveAll(w.tmp)
		return err
	}
	return nil
}

// Abort discards everything written so far.
func (w *Writer) Abort() {
	if !w.done {
		w.done = true
		os.RemoveAll(w.tmp)
		w.release()
	}
}

// writeSynced writes a file and syncs it: a power loss after the folder
// is swapped in must not leave an empty manifest (delayed allocation).
func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Build writes a whole store at dir: fill writes the files and returns the
// manifest's meta; on any error everything written is discarded.
func Build(dir string, fill func(w *Writer) (map[string]any, error)) error {
	w, err := NewWriter(dir)
	if err != nil {
		return err
	}
	meta, err := fill(w)
	if err != nil {
		w.Abort()
		return err
	}
	return w.Commit(meta)
}
