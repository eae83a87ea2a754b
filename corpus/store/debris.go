package store

import (
	"os"
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
		if !dead {
			busy = append(busy, d)
			continue
		}
		if os.RemoveAll(d) == nil {
			removed = append(removed, d)
		}
	}
	return removed, busy
}
