//go:build unix

package safefile

import (
	"os"
	"syscall"
)

// openNoBlock opens a file for reading without blocking: a FIFO swapped
// in after the caller's stat must not hang the import.
func openNoBlock(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
