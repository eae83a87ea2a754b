package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadRefusesWhatIsNotABoundedRegularFile(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.json")
	os.WriteFile(ok, []byte(`{"a":1}`), 0o644)
	if b, err := Read(ok, 100); err != nil || string(b) != `{"a":1}` {
		t.Fatalf("%q %v", b, err)
	}
	if _, err := Read(ok, 3); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("size limit: %v", err)
	}
	zero := filepath.Join(dir, "zero")
	os.Symlink("/dev/zero", zero)
	if _, err := Read(zero, 1<<40); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("/dev/zero behind a link: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if syscall.Mkfifo(fifo, 0o644) == nil {
		if _, err := Read(fifo, 100); !errors.Is(err, ErrNotRegular) {
			t.Fatalf("FIFO: %v", err)
		}
	}
	if _, err := Read(dir, 100); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("folder: %v", err)
	}
}
