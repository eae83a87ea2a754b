package auth

import (
	"fmt"
	"os"
	"path/filepath"
)

// Update changes the keys file at path under an exclusive lock (a hidden
// ".<name>.lock" beside it), so concurrent changes (two `gleaner keys add`,
// an add racing a revoke) each see the other's result: none is lost and
// no revocation is undone. change gets the current file (an empty one if
// there is none) and edits it; the result is checked and written whole.
func Update(path string, change func(*File) error) error {
	unlock, err := lockBeside(path)
	if err != nil {
		return err
	}
	defer unlock()
	f, err := LoadOrEmpty(path)
	if err != nil {
		return err
	}
	if err := change(&f); err != nil {
		return err
	}
	return Save(path, f)
}

// lockBeside takes the lock file of path, waiting for another holder.
func lockBeside(path string) (func(), error) {
	lp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".lock")
	lf, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("keys file lock: %w", err)
	}
	if err := lockFile(lf); err != nil {
		lf.Close()
		return nil, fmt.Errorf("keys file lock %s: %w", lp, err)
	}
	return func() { lf.Close() }, nil // closing releases the lock
}
