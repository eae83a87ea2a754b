package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"
	"unsafe"
)

// Reader is an opened store. Arrays it returns alias its files' memory
// (mapped, or copied with OpenOptions.Copy) and stay valid until Close; a
// Reader is safe for concurrent reads.
type Reader struct {
	Dir      string
	Manifest Manifest
	maps     map[string][]byte
	copied   bool
}

// OpenOptions controls Open's checks.
type OpenOptions struct {
	// SkipChecksums skips the CRC pass (sizes are always checked). Use it
	// only for stores you just verified.
	SkipChecksums bool
	// Copy reads every file into memory instead of mapping it: a file
	// truncated or rewritten in place afterwards can neither crash the
	// process (a mapped page past the end of a truncated file raises
	// SIGBUS) nor change what it reads. It costs the store's size in
	// memory; mapped stores share the page cache instead (Scrub detects
	// files changed under them).
	Copy bool
}

// swapRetryWait is how long Open waits before its one retry when the
// folder vanished under it: a rebuild swaps an index in with two renames,
// and an open between them finds no folder.
const swapRetryWait = 200 * time.Millisecond

// beforeOpen is called at the start of each open attempt (tests make a
// swap happen there).
var beforeOpen = func(attempt int) {}

// Open maps the store at dir after checking its manifest, the format
// version, every file's size and (unless skipped) every file's checksum.
// Every file is opened through the folder opened first (os.Root), so an
// open that races a rebuild's swap reads one whole store, the old or the
// new; an open that finds the folder gone mid-swap retries once.
func Open(dir string, opt OpenOptions) (*Reader, error) {
	if !hostIsLittleEndian() {
		return nil, fmt.Errorf("store: %s: big-endian hosts are not supported", dir)
	}
	r, err := open(dir, opt, 1)
	if err != nil && errors.Is(err, fs.ErrNotExist) {
		time.Sleep(swapRetryWait)
		r, err = open(dir, opt, 2)
	}
	return r, err
}

func open(dir string, opt OpenOptions, attempt int) (*Reader, error) {
	beforeOpen(attempt)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("store: %s is not a gleaner index (no %s): %w", dir, ManifestFile, err)
	}
	defer root.Close()
	m, err := readManifest(root, dir)
	if err != nil {
		return nil, err
	}
	r := &Reader{Dir: dir, Manifest: m, maps: map[string][]byte{}, copied: opt.Copy}
	files := map[string]*os.File{}
	defer closeAll(files)
	for name, fi := range m.Files {
		f, err := r.mapFile(root, name, fi)
		if err != nil {
			r.Close()
			return nil, err
		}
		if mapsFiles && !r.copied {
			files[name] = f
		} else {
			f.Close()
		}
	}
	if !opt.SkipChecksums {
		if err := r.verify("checksum %08x, manifest says %08x", files); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

func closeAll(files map[string]*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// verify compares every file's CRC-32C with the manifest's, on all cores
// in spans of a file (checksumFiles), and names the first mismatching
// file in name order; format gets the checksum found and the manifest's.
// A mapped store's files are checksummed through their descriptors in
// files: reading the page cache ran at 9–10 GB/s a core here, first
// touches of the mapping at 3.4 (the pages a query never reads then
// never fault). Without a descriptor (a copied store, and Scrub, which
// checks the bytes the reader serves) the memory is checksummed.
func (r *Reader) verify(format string, files map[string]*os.File) error {
	names := make([]string, 0, len(r.maps))
	for name := range r.maps {
		names = append(names, name)
	}
	sort.Strings(names)
	sizes := make([]int64, len(names))
	for i, name := range names {
		sizes[i] = int64(len(r.maps[name]))
	}
	bufLen := 0
	if len(files) > 0 {
		bufLen = readBytes
	}
	sums, errs := checksumFiles(sizes, spanBytes, runtime.GOMAXPROCS(0), bufLen, func(s span, buf []byte) (uint32, error) {
		if f := files[names[s.file]]; f != nil {
			return crcAt(f, s.off, s.n, buf)
		}
		return crc32.Checksum(r.maps[names[s.file]][s.off:s.off+s.n], castagnoli), nil
	})
	for i, name := range names {
		if errs[i] != nil {
			return corrupt(r.Dir, name, "reading %v", errs[i])
		}
		if want := r.Manifest.Files[name].CRC32C; sums[i] != want {
			return corrupt(r.Dir, name, format, sums[i], want)
		}
	}
	return nil
}

func readManifest(root *os.Root, dir string) (Manifest, error) {
	var m Manifest
	b, err := root.ReadFile(ManifestFile)
	if err != nil {
		return m, fmt.Errorf("store: %s is not a gleaner index (no %s): %w", dir, ManifestFile, err)
	}
	return parseManifest(b, dir)
}

// parseManifest decodes and checks a manifest's bytes.
func parseManifest(b []byte, dir string) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return m, corrupt(dir, ManifestFile, "%v", err)
	}
	if m.Format == FormatName && m.Version != FormatVersion {
		return m, fmt.Errorf("store: %s: index format version %d, this gleaner reads version %d: %w", dir, m.Version, FormatVersion, ErrVersion)
	}
	if err := verifyManifest(b); err != nil {
		return m, corrupt(dir, ManifestFile, "%v", err)
	}
	switch {
	case m.Format != FormatName:
		return m, corrupt(dir, ManifestFile, "format %q, want %q", m.Format, FormatName)
	case m.ByteOrder != "little":
		return m, corrupt(dir, ManifestFile, "byte order %q", m.ByteOrder)
	}
	return m, nil
}

// mapFile maps (or copies) one file after checking its name, kind and
// size, and returns it still open; the caller closes it.
func (r *Reader) mapFile(root *os.Root, name string, fi FileInfo) (*os.File, error) {
	if filepath.Base(name) != name {
		return nil, corrupt(r.Dir, ManifestFile, "file name %q escapes the index folder", name)
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, corrupt(r.Dir, name, "%v", err)
	}
	if err := r.mapChecked(f, name, fi); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// mapChecked maps (or copies) the open file f after checking its size.
func (r *Reader) mapChecked(f *os.File, name string, fi FileInfo) error {
	st, err := f.Stat() // what was opened, not what the name points at now
	switch {
	case err != nil:
		return corrupt(r.Dir, name, "%v", err)
	case !st.Mode().IsRegular():
		return corrupt(r.Dir, name, "not a regular file (%s)", st.Mode().Type())
	case st.Size() != fi.Bytes:
		return corrupt(r.Dir, name, "size %d bytes, manifest says %d (truncated or replaced)", st.Size(), fi.Bytes)
	case fi.Bytes%elemSize(fi.Kind) != 0:
		return corrupt(r.Dir, name, "size %d is not a multiple of its %s elements", fi.Bytes, fi.Kind)
	}
	var b []byte
	if r.copied {
		b, err = readAligned(f, fi.Bytes)
	} else {
		b, err = mapOpened(f, fi.Bytes)
	}
	if err != nil {
		return fmt.Errorf("store: reading %s: %w", filepath.Join(r.Dir, name), err)
	}
	r.maps[name] = b
	return nil
}

// readAligned reads exactly size bytes of f into 8-byte-aligned memory
// (the arrays are read in place as int64 and float32).
func readAligned(f *os.File, size int64) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	words := make([]uint64, (size+7)/8)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("shorter than its %d bytes: %w", size, err)
	}
	return b, nil
}

// Scrub recomputes every file's checksum over the bytes the reader serves
// and compares it with the manifest: a mapped file rewritten in place
// since Open is reported (ErrCorrupt, naming it) instead of being served
// as valid data. Copied stores cannot change; Scrub checks them too.
func (r *Reader) Scrub() error {
	return r.verify("changed in place since it was opened: checksum %08x, manifest says %08x", nil)
}

// Has reports whether the store holds name.
func (r *Reader) Has(name string) bool { _, ok := r.Manifest.Files[name]; return ok }

func (r *Reader) get(name, kind string) ([]byte, error) {
	fi, ok := r.Manifest.Files[name]
	if !ok {
		return nil, corrupt(r.Dir, name, "missing from the manifest")
	}
	if fi.Kind != kind {
		return nil, corrupt(r.Dir, name, "holds %s, want %s", fi.Kind, kind)
	}
	return r.maps[name], nil
}

func view[T float32 | uint32 | int32 | int64](b []byte) []T {
	if len(b) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/int(unsafe.Sizeof(z)))
}

// F32 returns a float32 array.
func (r *Reader) F32(name string) ([]float32, error) {
	b, err := r.get(name, KindF32)
	return view[float32](b), err
}

// U32 returns a uint32 array.
func (r *Reader) U32(name string) ([]uint32, error) {
	b, err := r.get(name, KindU32)
	return view[uint32](b), err
}

// I32 returns an int32 array.
func (r *Reader) I32(name string) ([]int32, error) {
	b, err := r.get(name, KindI32)
	return view[int32](b), err
}

// I64 returns an int64 array.
func (r *Reader) I64(name string) ([]int64, error) {
	b, err := r.get(name, KindI64)
	return view[int64](b), err
}

// Bytes returns a raw byte file.
func (r *Reader) Bytes(name string) ([]byte, error) { return r.get(name, KindBytes) }

// JSON decodes a JSON document into v.
func (r *Reader) JSON(name string, v any) error {
	b, err := r.get(name, KindJSON)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return corrupt(r.Dir, name, "%v", err)
	}
	return nil
}

// Close unmaps every file. Arrays obtained from r must not be used after.
func (r *Reader) Close() error {
	var first error
	for name, b := range r.maps {
		if r.copied {
			delete(r.maps, name)
			continue
		}
		if err := unmap(b); err != nil && first == nil {
			first = err
		}
		delete(r.maps, name)
	}
	return first
}

func hostIsLittleEndian() bool {
	x := uint16(1)
	return (*[2]byte)(unsafe.Pointer(&x))[0] == 1
}

// Raw returns a file's bytes whatever its kind, with its description (for
// copying a file into a new store).
func (r *Reader) Raw(name string) ([]byte, FileInfo, bool) {
	fi, ok := r.Manifest.Files[name]
	return r.maps[name], fi, ok
}
