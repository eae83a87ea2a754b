package store

import (
	"bytes"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Combining two parts' checksums gives the whole's, at every split of
// random data (lengths 0 to 300, so every bit of lenB's loop is taken).
func TestCRC32CCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 500; trial++ {
		b := make([]byte, rng.IntN(300))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		cut := 0
		if len(b) > 0 {
			cut = rng.IntN(len(b) + 1)
		}
		whole := crc32.Checksum(b, castagnoli)
		got := crc32cCombine(crc32.Checksum(b[:cut], castagnoli), crc32.Checksum(b[cut:], castagnoli), int64(len(b)-cut))
		if got != whole {
			t.Fatalf("len %d cut %d: combined %08x, whole %08x", len(b), cut, got, whole)
		}
	}
}

// checksumFiles gives every file's CRC-32C whatever the span length and
// the number of workers, reading through the worker's buffer, and reports
// a read error against its file.
func TestChecksumFilesInSpans(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	files := make([][]byte, 6)
	sizes := make([]int64, len(files))
	for i := range files {
		files[i] = make([]byte, []int{0, 1, 7, 64, 1000, 3 * readBytes / 2}[i])
		for j := range files[i] {
			files[i][j] = byte(rng.Uint32())
		}
		sizes[i] = int64(len(files[i]))
	}
	for _, spanLen := range []int64{1, 7, 64, readBytes, 3 * readBytes} {
		for _, workers := range []int{1, 2, 5} {
			sums, errs := checksumFiles(sizes, spanLen, workers, readBytes, func(s span, buf []byte) (uint32, error) {
				return crcAt(bytes.NewReader(files[s.file]), s.off, s.n, buf[:min(len(buf), 5)])
			})
			for i, b := range files {
				if errs[i] != nil || sums[i] != crc32.Checksum(b, castagnoli) {
					t.Fatalf("span %d, %d workers, file %d: %08x, %v", spanLen, workers, i, sums[i], errs[i])
				}
			}
		}
	}
	boom := errors.New("boom")
	_, errs := checksumFiles(sizes, 7, 2, 0, func(s span, buf []byte) (uint32, error) {
		if s.file == 4 && s.off > 0 {
			return 0, boom
		}
		return 0, nil
	})
	for i, err := range errs {
		if (i == 4) != errors.Is(err, boom) {
			t.Fatalf("file %d: error %v", i, err)
		}
	}
}

// A byte flipped past the first span of a file larger than one span is
// found, mapped and copied, at open and by Scrub.
func TestOpenChecksumsLargeFilesInSpans(t *testing.T) {
	big := make([]byte, spanBytes+spanBytes/2+3)
	for i := range big {
		big[i] = byte(i * 7)
	}
	dir := writeBigStore(t, big)
	for _, copied := range []bool{false, true} {
		r, err := Open(dir, OpenOptions{Copy: copied})
		if err != nil {
			t.Fatalf("copy %v: %v", copied, err)
		}
		if err := r.Scrub(); err != nil {
			t.Fatalf("copy %v: scrub: %v", copied, err)
		}
		r.Close()
	}
	p := filepath.Join(dir, "big.bytes")
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{^big[spanBytes+5]}, spanBytes+5); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, copied := range []bool{false, true} {
		r, err := Open(dir, OpenOptions{Copy: copied})
		if err == nil {
			r.Close()
			t.Fatalf("copy %v: a flipped byte in the second span opened", copied)
		}
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "big.bytes: checksum") {
			t.Fatalf("copy %v: %v", copied, err)
		}
	}
}

// A file that shrinks after it was mapped and before its checksum is
// reported as a damaged index file (ErrCorrupt), naming it, and its
// mapping is never read past the new end.
func TestVerifyReportsAFileTruncatedSinceMapped(t *testing.T) {
	dir := writeBigStore(t, make([]byte, 3*readBytes))
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	r, files := mapThrough(t, root, dir)
	defer r.Close()
	defer closeAll(files)
	if err := os.Truncate(filepath.Join(dir, "big.bytes"), readBytes); err != nil {
		t.Fatal(err)
	}
	err = r.verify("checksum %08x, manifest says %08x", files)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "big.bytes") || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("got %v, want ErrCorrupt naming big.bytes as truncated", err)
	}
}

// writeBigStore writes a store of big (big.bytes) and a one-float file,
// and returns its folder.
func writeBigStore(t *testing.T, big []byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ix")
	w, err := NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := firstErr(w.Bytes("big.bytes", big), w.F32("a.f32", []float32{1})); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(nil); err != nil {
		t.Fatal(err)
	}
	return dir
}
