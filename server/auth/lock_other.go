//go:build !unix

package auth

import "os"

// lockFile cannot lock here: concurrent changes to a keys file are not
// serialised on this system.
func lockFile(*os.File) error { return nil }
