//go:build unix

package wal

import (
	"os"

	"golang.org/x/sys/unix"
)

// tryLock takes a lock on f without waiting (exclusive or shared); false
// when another process holds a conflicting one.
func tryLock(f *os.File, exclusive bool) bool {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	return unix.Flock(int(f.Fd()), how|unix.LOCK_NB) == nil
}

func unlock(f *os.File) { unix.Flock(int(f.Fd()), unix.LOCK_UN) }
