package store

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"unsafe"
)

// Reader is an opened store. Arrays it returns alias memory-mapped files and
// stay valid until Close; a Reader is safe for concurrent reads.
type Reader struct {
	Dir      string
	Manifest Manifest
	maps     map[string][]byte
}

// OpenOptions controls Open's checks.
type OpenOptions struct {
	// SkipChecksums skips the CRC pass (sizes are always checked). Use it
	// only for stores you just verified.
	SkipChecksums bool
}

// Open maps the store at dir after checking its manifest, the format
// version, every file's size and (unless skipped) every file's checksum.
func Open(dir string, opt OpenOptions) (*Reader, error) {
	if !hostIsLittleEndian() {
		return nil, fmt.Errorf("store: %s: big-endian hosts are not supported", dir)
	}
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	r := &Reader{Dir: dir, Manifest: m, maps: map[string][]byte{}}
	for name, fi := range m.Files {
		if err := r.mapFile(name, fi, !opt.SkipChecksums); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

func readManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
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

func (r *Reader) mapFile(name string, fi FileInfo, verify bool) error {
	if filepath.Base(name) != name {
		return corrupt(r.Dir, ManifestFile, "file name %q escapes the index folder", name)
	}
	path := filepath.Join(r.Dir, name)
	st, err := os.Stat(path)
	if err != nil {
		return corrupt(r.Dir, name, "%v", err)
	}
	if st.Size() != fi.Bytes {
		return corrupt(r.Dir, name, "size %d bytes, manifest says %d (truncated or replaced)", st.Size(), fi.Bytes)
	}
	if fi.Bytes%elemSize(fi.Kind) != 0 {
		return corrupt(r.Dir, name, "size %d is not a multiple of its %s elements", fi.Bytes, fi.Kind)
	}
	b, err := mapReadOnly(path, fi.Bytes)
	if err != nil {
		return fmt.Errorf("store: mapping %s: %w", path, err)
	}
	r.maps[name] = b
	if verify {
		if got := crc32.Checksum(b, castagnoli); got != fi.CRC32C {
			return corrupt(r.Dir, name, "checksum %08x, manifest says %08x", got, fi.CRC32C)
		}
	}
	return nil
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
