package store

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// A write in progress holds an exclusive lock on its hidden folder (flock,
// released by the kernel when the process ends, kill -9 included), so the
// next run can tell the debris of a dead write from a folder another
// process is still writing.

// Hold locks the hidden folder dir for the life of a write; release
// unlocks it. Where locks are unsupported it holds nothing, and
// CleanDebris then keeps every folder.
func Hold(dir string) (release func()) {
	f, err := os.Open(dir)
	if err != nil {
		return func() {}
	}
	if !tryLock(f) {
		f.Close()
		return func() {}
	}
	return func() { f.Close() } // closing drops the lock
}

// CleanDebris removes the hidden siblings of final (Debris) that
// interrupted writes left behind, and returns them. First it moves back
// into final the user's entries that a crash stranded in one and that
// final lacks (restored: their paths in final), and, when a crash between
// a two-rename swap's renames left no final, renames the old folder back.
// Folders another process is still writing (locked), and folders still
// holding user entries that final holds differently, are kept and
// returned as busy. The user's entries are those a store's manifest does
// not list; CleanDebrisOf names them for folders without a manifest.
func CleanDebris(final string) (removed, restored, busy []string) {
	return CleanDebrisOf(final, nil)
}

// CleanDebrisOf is CleanDebris for folders whose own entries owned names
// (a corpus folder has no manifest); nil means a store's manifest.
func CleanDebrisOf(final string, owned func(name string) bool) (removed, restored, busy []string) {
	final = Target(final) // writes stage beside a symbolic link's folder
	if reinstateOld(final) != "" {
		restored = append(restored, final)
	}
	for _, d := range Debris(final) {
		f, err := os.Open(d)
		if err != nil {
			continue
		}
		dead := tryLock(f) // no live writer holds it
		f.Close()
		if !dead {
			busy = append(busy, d)
			continue
		}
		back, clear := restoreForeign(d, final, owned)
		restored = append(restored, back...)
		if !clear {
			busy = append(busy, d)
			continue
		}
		if os.RemoveAll(d) == nil {
			removed = append(removed, d)
		}
	}
	return removed, restored, busy
}

// reinstateOld renames the old folder of a two-rename swap (swapIn's
// ".old") back to final when a crash between the renames left final
// missing, and returns it ("" when there was nothing to do).
func reinstateOld(final string) string {
	if _, err := os.Lstat(final); !errors.Is(err, os.ErrNotExist) {
		return ""
	}
	for _, d := range Debris(final) {
		if !strings.HasSuffix(d, ".old") {
			continue
		}
		if f, err := os.Open(d); err == nil {
			dead := tryLock(f)
			f.Close()
			if dead && os.Rename(d, final) == nil {
				return d
			}
		}
	}
	return ""
}

// restoreForeign moves the user's entries of the dead folder dir that
// final lacks into final, and reports whether dir then holds nothing of
// the user's that final does not hold as the same files (clear: it may be
// removed). owned names the folder's own entries; nil reads them from its
// manifest, and then a folder without one is an unfinished write's, whose
// entries are all the store's, unless it is a ".kept-" one, which is kept.
func restoreForeign(dir, final string, owned func(string) bool) (restored []string, clear bool) {
	if owned == nil {
		b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
		if err != nil {
			return nil, !strings.Contains(filepath.Base(dir), ".kept-")
		}
		var m Manifest
		if json.Unmarshal(b, &m) != nil {
			return nil, false
		}
		owned = func(name string) bool {
			_, listed := m.Files[name]
			return listed || name == ManifestFile
		}
	}
	foreign, err := foreignEntries(dir, owned)
	if err != nil {
		return nil, false
	}
	if fi, err := os.Stat(final); err != nil || !fi.IsDir() {
		return nil, len(foreign) == 0 // no folder to move them into
	}
	clear = true
	for _, name := range foreign {
		from, to := filepath.Join(dir, name), filepath.Join(final, name)
		if _, err := os.Lstat(to); errors.Is(err, os.ErrNotExist) {
			if os.Rename(from, to) == nil {
				restored = append(restored, to)
				continue
			}
		}
		if !sameTree(from, to) {
			clear = false
		}
	}
	return restored, clear
}

// sameTree reports whether every file under a (a file, or a folder's
// files at any depth) is the same file as its counterpart under b: removing
// a then loses nothing. b may hold more.
func sameTree(a, b string) bool {
	fa, err := os.Lstat(a)
	if err != nil {
		return false
	}
	fb, err := os.Lstat(b)
	if err != nil || fa.IsDir() != fb.IsDir() {
		return false
	}
	if !fa.IsDir() {
		return os.SameFile(fa, fb)
	}
	entries, err := os.ReadDir(a)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !sameTree(filepath.Join(a, e.Name()), filepath.Join(b, e.Name())) {
			return false
		}
	}
	return true
}
