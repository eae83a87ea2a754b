package store

import (
	"encoding/json"
	"os"
	"path/filepath"
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
// interrupted writes left behind, and returns them; folders another
// process is still writing (locked) are kept and returned as busy.
func CleanDebris(final string) (removed, busy []string) {
	for _, d := range Debris(final) {
		f, err := os.Open(d)
		if err != nil {
			continue
		}
		dead := tryLock(f) // no live writer holds it
		f.Close()
		if !dead || holdsForeign(d, Target(final)) {
			busy = append(busy, d)
			continue
		}
		if os.RemoveAll(d) == nil {
			removed = append(removed, d)
		}
	}
	return removed, busy
}

// holdsForeign reports whether a debris folder is a complete store that
// holds entries its manifest does not list and that final does not also
// hold as the same files: the user's files, which a crash stopped moving
// back into the folder they came from (ReplaceDir). It is kept, and named,
// rather than removed. Entries that are hard links of final's (ReplaceDir
// links the user's files before the swap) are copies, not the only ones.
func holdsForeign(dir, final string) bool {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return false
	}
	var m Manifest
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	foreign, err := foreignEntries(dir, func(name string) bool {
		_, listed := m.Files[name]
		return listed || name == ManifestFile
	})
	if err != nil {
		return false
	}
	for _, name := range foreign {
		if !sameTree(filepath.Join(dir, name), filepath.Join(final, name)) {
			return true
		}
	}
	return false
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
