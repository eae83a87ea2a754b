// Package store is gleaner's on-disk array store: a folder of little-endian
// binary arrays and JSON documents described by a manifest that carries a
// format version and a CRC-32C checksum per file. Folders are written to a
// temporary sibling and renamed into place, so a reader never sees a
// half-written index; they are opened by memory-mapping the arrays, so
// opening costs a checksum pass, not a parse.
package store

import (
	"errors"
	"fmt"
	"hash/crc32"
	"sort"
)

// FormatName and FormatVersion identify the on-disk layout. Bump the version
// whenever an array's meaning or encoding changes.
const (
	FormatName    = "gleaner-index"
	FormatVersion = 3 // 2: the manifest checksums itself; 3: sections (named, versioned, "<section>.<file>")
	ManifestFile  = "manifest.json"
)

// Element kinds recorded per file.
const (
	KindF32   = "f32"
	KindU32   = "u32"
	KindI32   = "i32"
	KindI64   = "i64"
	KindBytes = "bytes"
	KindJSON  = "json"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FileInfo describes one file of the store.
type FileInfo struct {
	Kind   string `json:"kind"`
	Bytes  int64  `json:"bytes"`
	CRC32C uint32 `json:"crc32c"`
}

// Manifest is the store's table of contents.
type Manifest struct {
	Format    string              `json:"format"`
	Version   int                 `json:"version"`
	ByteOrder string              `json:"byte_order"`
	Created   string              `json:"created"`
	Meta      map[string]any      `json:"meta,omitempty"`
	Files     map[string]FileInfo `json:"files"`
	// Checksum is the manifest's own CRC-32C (see sealManifest).
	Checksum string `json:"checksum"`
}

// Names lists the manifest and every file it describes, sorted.
func (m Manifest) Names() []string {
	names := []string{ManifestFile}
	for name := range m.Files {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// ErrVersion marks a store written in another format version: rebuild it
// (index.Build) with this gleaner.
var ErrVersion = errors.New("rebuild the index with this version of gleaner")

// ErrCorrupt marks a store that fails its checks.
var ErrCorrupt = errors.New("corrupt index")

func corrupt(dir, file, format string, args ...any) error {
	return fmt.Errorf("%w %s: %s: %s", ErrCorrupt, dir, file, fmt.Sprintf(format, args...))
}

func elemSize(kind string) int64 {
	switch kind {
	case KindF32, KindU32, KindI32:
		return 4
	case KindI64:
		return 8
	}
	return 1
}
