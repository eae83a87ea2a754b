package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"

	"github.com/gleaner-rag/gleaner/internal/jsonfile"
	"github.com/gleaner-rag/gleaner/internal/safefile"
)

// FileVersion is the keys file format this package reads and writes.
const FileVersion = 1

// MaxFileBytes bounds a keys file (a million keys fit in far less).
const MaxFileBytes = 64 << 20

// File is a keys file: {"version": 1, "keys": [...]}.
type File struct {
	Version int   `json:"version"`
	Keys    []Key `json:"keys"`
}

// Keyring is a checked keys file, ready to authenticate tokens. It is
// immutable, so safe for concurrent use; a reload makes a new one.
type Keyring struct {
	keys map[string]entry
	file File
}

type entry struct {
	key       *Key
	salt, sum []byte
}

// New checks a keys file's keys and makes a keyring of them; an error
// names the key by its position and id, and the field.
func New(f File) (*Keyring, error) {
	if f.Version != FileVersion {
		return nil, fmt.Errorf("version %d: this gleaner reads keys files of version %d", f.Version, FileVersion)
	}
	r := &Keyring{keys: make(map[string]entry, len(f.Keys)), file: File{Version: f.Version, Keys: slices.Clone(f.Keys)}}
	for i := range r.file.Keys {
		k := &r.file.Keys[i]
		if err := k.check(); err != nil {
			return nil, fmt.Errorf("keys[%d] (id %q): %w", i, clip(k.ID), err)
		}
		if _, dup := r.keys[k.ID]; dup {
			return nil, fmt.Errorf("keys[%d]: the id %q is given twice", i, k.ID)
		}
		salt, sum, _ := parseHash(k.Hash)
		r.keys[k.ID] = entry{key: k, salt: salt, sum: sum}
	}
	return r, nil
}

// Load reads and checks the keys file at path. A missing file is an
// error: a server told to check keys never runs open by accident.
func Load(path string) (*Keyring, error) {
	b, err := safefile.Read(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("keys file: %w", err)
	}
	if st, err := os.Stat(path); err == nil && runtime.GOOS != "windows" && st.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("keys file %s: mode %v lets other users write it (and add a key of their own): chmod go-w %s", path, st.Mode().Perm(), path)
	}
	var f File
	if err := jsonfile.Decode(b, &f); err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	r, err := New(f)
	if err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	return r, nil
}

// LoadOrEmpty reads the keys file at path, or returns an empty one when
// there is none (gleaner keys add starts a file).
func LoadOrEmpty(path string) (File, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return File{Version: FileVersion}, nil
	}
	r, err := Load(path)
	if err != nil {
		return File{}, err
	}
	return r.File(), nil
}

// File is a copy of the keyring's keys file.
func (r *Keyring) File() File {
	return File{Version: r.file.Version, Keys: slices.Clone(r.file.Keys)}
}

// Len is the number of keys (0 for a nil keyring).
func (r *Keyring) Len() int {
	if r == nil {
		return 0
	}
	return len(r.keys)
}

// Key returns the key with the given id, or nil.
func (r *Keyring) Key(id string) *Key {
	if r == nil {
		return nil
	}
	return r.keys[id].key
}

// Save checks f and writes it to path whole (beside it, then renamed),
// readable by the owner only.
func Save(path string, f File) error {
	if _, err := New(f); err != nil {
		return err
	}
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return jsonfile.Replace(path, append(b, '\n'), 0o600)
}

// HasGroups reports whether some key carries ACL groups.
func (r *Keyring) HasGroups() bool {
	if r == nil {
		return false
	}
	for _, e := range r.keys {
		if len(e.key.Groups) > 0 {
			return true
		}
	}
	return false
}
