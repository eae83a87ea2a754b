//go:build linux

package store

import (
	"os"
	"path/filepath"
	"testing"
)

// TestExchangeSwaps checks that folders swap in one step here (the test
// folder's file system); where it cannot, ReplaceDir falls back to two
// renames and this test says so.
func TestExchangeSwaps(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.MkdirAll(a, 0o755)
	os.MkdirAll(b, 0o755)
	os.WriteFile(filepath.Join(a, "x"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(b, "x"), []byte("b"), 0o644)
	if err := exchange(a, b); err == errExchange {
		t.Skip("this file system cannot exchange folders atomically")
	} else if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(b, "x")); string(got) != "a" {
		t.Fatalf("after exchange b holds %q", got)
	}
}
