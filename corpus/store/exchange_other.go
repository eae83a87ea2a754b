//go:build !linux

package store

// exchange is not available here: ReplaceDir renames twice.
func exchange(a, b string) error { return errExchange }
