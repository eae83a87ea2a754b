package wal

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)) }

func payload(i int) []byte {
	return []byte(fmt.Sprintf("record %d %s", i, bytes.Repeat([]byte("x"), i%37)))
}

// fill opens a log in dir and appends n records, one Append per batch of
// up to 3.
func fill(t *testing.T, dir string, n int) *Log {
	t.Helper()
	l, err := Open(dir, "base", 1, Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; {
		var batch [][]byte
		for k := 0; k < 3 && i <= n; k, i = k+1, i+1 {
			batch = append(batch, payload(i))
		}
		if _, err := l.Append(batch...); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func replayAll(t *testing.T, l *Log, after uint64) [][]byte {
	t.Helper()
	var got [][]byte
	next := after + 1
	err := l.Replay(after, func(seq uint64, p []byte) error {
		if seq != next {
			t.Fatalf("replayed record %d, want %d", seq, next)
		}
		next++
		got = append(got, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func want(from, to int) [][]byte {
	var out [][]byte
	for i := from; i <= to; i++ {
		out = append(out, payload(i))
	}
	return out
}

func TestAppendReopenReplay(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := fill(t, dir, 10)
	h := l.Header()
	if err := l.Rotate(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(payload(11)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l, err := Open(dir, "ignored", 1, Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Header() != h || h.Extends != "base" || l.Last() != 11 {
		t.Fatalf("reopened: header %+v last %d, want %+v and 11", l.Header(), l.Last(), h)
	}
	if got := replayAll(t, l, 4); !reflect.DeepEqual(got, want(5, 11)) {
		t.Fatalf("replay after 4: %d records", len(got))
	}
	if err := l.Drop(10); err != nil {
		t.Fatal(err)
	}
	if st := l.Stats(); st.Segments != 1 {
		t.Fatalf("after Drop(10): %d segments, want 1", st.Segments)
	}
	if err := l.Replay(3, func(uint64, []byte) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("replay of dropped records: %v, want ErrCorrupt", err)
	}
	if got := replayAll(t, l, 10); !reflect.DeepEqual(got, want(11, 11)) {
		t.Fatalf("replay after 10: %d records", len(got))
	}
}

// TestTornTail cuts the last segment at every byte of its last group (an
// Append of 3 records): each cut loses that group whole, with a warning,
// and the log appends after it.
func TestTornTail(t *testing.T) {
	base := filepath.Join(t.TempDir(), "log")
	l := fill(t, base, 6)
	path := l.segs[0].path
	l.Close()
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lens := recordEnds(t, full)
	for cut := lens[3]; cut < int64(len(full)); cut++ {
		dir := filepath.Join(t.TempDir(), "log")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, filepath.Base(path)), full[:cut], 0o644)
		var logs bytes.Buffer
		l, err := Open(dir, "", 1, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		kept := 4 // the header's end and the first group's 3 records
		if l.Last() != uint64(kept-1) {
			t.Fatalf("cut at %d: last %d, want %d", cut, l.Last(), kept-1)
		}
		if cut != lens[kept-1] && !bytes.Contains(logs.Bytes(), []byte("crash interrupted")) {
			t.Fatalf("cut at %d: no warning", cut)
		}
		if _, err := l.Append(payload(99)); err != nil {
			t.Fatal(err)
		}
		if got := replayAll(t, l, 0); len(got) != kept || !bytes.Equal(got[kept-1], payload(99)) {
			t.Fatalf("cut at %d: replay has %d records", cut, len(got))
		}
		l.Close()
	}
}

// recordEnds returns the offsets where the header and each record end.
func recordEnds(t *testing.T, b []byte) []int64 {
	t.Helper()
	n := int64(16 + binary32(b[12:]) + 4)
	ends := []int64{n}
	for n < int64(len(b)) {
		n += 8 + int64(binary32(b[n:]))
		ends = append(ends, n)
	}
	return ends
}

func binary32(b []byte) uint32 {
	return (uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24) &^ groupEnd
}

// TestCorruptionIsNotTorn flips bytes where valid records follow: the log
// refuses to open, naming the file.
func TestCorruptionIsNotTorn(t *testing.T) {
	for _, segmented := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "log")
		l := fill(t, dir, 6)
		path := l.segs[0].path
		if segmented {
			l.Rotate()
			l.Append(payload(7))
		}
		l.Close()
		b, _ := os.ReadFile(path)
		ends := recordEnds(t, b)
		at := ends[2] + 20 // inside record 3's payload
		if segmented {
			at = ends[len(ends)-1] - 2 // the first segment's last record
		}
		b[at] ^= 0x40
		os.WriteFile(path, b, 0o644)
		_, err := Open(dir, "", 1, Options{Logger: quiet()})
		if !errors.Is(err, ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(filepath.Base(path))) {
			t.Fatalf("segmented %v: open after a flipped byte: %v, want ErrCorrupt naming the file", segmented, err)
		}
	}
}

func TestZeroTailAndTornSegmentStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := fill(t, dir, 4)
	path := l.segs[0].path
	l.Close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(make([]byte, 100)) // a file system that extended the file before the crash
	f.Close()
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.wal", 5)), []byte("GLNR"), 0o644) // a torn Rotate
	l, err := Open(dir, "", 1, Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Last() != 4 || l.Stats().Segments != 1 {
		t.Fatalf("last %d, %d segments; want 4 and 1", l.Last(), l.Stats().Segments)
	}
}

func TestLockAndLimits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := fill(t, dir, 1)
	defer l.Close()
	if !Locked(dir) {
		t.Error("Locked: false while open")
	}
	if _, err := Open(dir, "", 1, Options{Logger: quiet()}); !errors.Is(err, ErrLocked) {
		t.Errorf("second open: %v, want ErrLocked", err)
	}
	if _, err := l.Append(make([]byte, MaxRecord+1)); err == nil {
		t.Error("an oversized record was accepted")
	}
	if _, err := Open(t.TempDir(), "", 1, Options{}); err == nil {
		t.Error("no logger accepted")
	}
}

// TestScrambledLastGroup damages a record in the middle of the last group
// while the group's later records are intact (a power loss can write an
// unsynced group's blocks in any order): the group is cut off whole, not
// taken for corruption.
func TestScrambledLastGroup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := fill(t, dir, 6)
	path := l.segs[0].path
	l.Close()
	b, _ := os.ReadFile(path)
	ends := recordEnds(t, b)
	b[ends[4]+20] ^= 0x40 // record 5, in the group of records 4–6
	os.WriteFile(path, b, 0o644)
	l, err := Open(dir, "", 1, Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Last() != 3 {
		t.Fatalf("last %d, want 3 (the damaged group cut off)", l.Last())
	}
	if got := replayAll(t, l, 0); !reflect.DeepEqual(got, want(1, 3)) {
		t.Fatalf("replay: %d records", len(got))
	}
}
