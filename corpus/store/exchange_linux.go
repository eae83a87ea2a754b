//go:build linux

package store

import "golang.org/x/sys/unix"

// exchange swaps the folders a and b in one atomic step, so that a crash
// never leaves b's path empty; errExchange when the system or the file
// system cannot.
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if err == unix.ENOSYS || err == unix.EINVAL {
		return errExchange
	}
	return err
}
