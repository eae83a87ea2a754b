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
// final lacks (restored: their paths in final). Folders another process
// is still writing (locked), and folders still holding user entries that
// final holds differently, are kept and returned as busy.
func CleanDebris(final string) (removed, restored, busy []string) {
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
		back, clear := restoreForeign(d, Target(final))
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

// restoreForeign moves the entries of the dead folder dir that its
// manifest does not list (the user's) and that final lacks into final, and
// reports whether dir then holds nothing of the user's that final does not
// hold as the same files (clear: it may be removed). A folder without a
// manifest is an unfinished write's, whose entries are all the store's;
// a ".kept-" one is kept (ReplaceDir's keep names only indexes', which
// have manifests, but a corpus folder has none).
func restoreForeign(dir, final string) (restored []string, clear bool) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, !strings.Contains(filepath.Base(dir), ".kept-")
	}
	var m Manifest
	if json.Unmarshal(b, &m) != nil {
		return nil, false
	}
	foreign, err := foreignEntries(dir, func(name string) bool {
		_, listed := m.Files[name]
		return listed || name == ManifestFile
	})
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
