package fleet

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-rag/gleaner/index/fleet/fleettest"
)

// TestReadTarRefusesEscapes: entries out of the folder, links and more
// bytes than the snapshot holds are refused.
func TestReadTarRefusesEscapes(t *testing.T) {
	mk := func(hs ...tar.Header) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, h := range hs {
			h.Mode = 0o644
			tw.WriteHeader(&h)
			if h.Typeflag == tar.TypeReg {
				tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
			}
		}
		tw.Close()
		return buf.Bytes()
	}
	cases := map[string]struct {
		data  []byte
		limit uint64
		want  string
	}{
		"parent":   {mk(tar.Header{Name: "../evil", Size: 1, Typeflag: tar.TypeReg}), 100, "out of the index folder"},
		"absolute": {mk(tar.Header{Name: "/tmp/evil", Size: 1, Typeflag: tar.TypeReg}), 100, "out of the index folder"},
		"symlink":  {mk(tar.Header{Name: "link", Linkname: "/etc/passwd", Typeflag: tar.TypeSymlink}), 100, "not a regular file"},
		"oversize": {mk(tar.Header{Name: "big", Size: 50, Typeflag: tar.TypeReg}), 10, "more than the snapshot's"},
		"twice":    {mk(tar.Header{Name: "a", Size: 1, Typeflag: tar.TypeReg}, tar.Header{Name: "a", Size: 1, Typeflag: tar.TypeReg}), 100, "exists"},
	}
	for name, c := range cases {
		dir := filepath.Join(t.TempDir(), "out")
		err := readTar(bytes.NewReader(c.data), dir, c.limit)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "evil")); err == nil {
			t.Errorf("%s: a file was written out of the folder", name)
		}
	}
}

// TestFollowCloseLeavesNothing: following and closing again and again
// leaves no goroutine behind (a reader blocked on the stream).
func TestFollowCloseLeavesNothing(t *testing.T) {
	cl := fleettest.Start(t, 1)
	l := openLog(t, connect(t, cl.URLs(), 1))
	w := openWriter(t, copyIndex(t, baseIndex(t)))
	defer w.Close()
	log, _ := newLogger()
	cycle := func() {
		r, err := Follow(context.Background(), l, w, DefaultFollowOptions(log))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		r.Close()
	}
	cycle()
	before := settledGoroutines()
	for i := 0; i < 5; i++ {
		cycle()
	}
	if after := settledGoroutines(); after > before+2 {
		t.Errorf("%d goroutines after 5 follow/close cycles, %d before", after, before)
	}
}

// settledGoroutines counts the goroutines of this process but the NATS
// server's (which reaps a closed replica's consumer after a while).
func settledGoroutines() int {
	for i := 0; i < 50; i++ {
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 8<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if !strings.Contains(g, "nats-server/v2/server") {
			n++
		}
	}
	return n
}

// TestForeignIndexRefused: an index other than the one the log started
// from cannot follow it from the start.
func TestForeignIndexRefused(t *testing.T) {
	cl := fleettest.Start(t, 1)
	l := openLog(t, connect(t, cl.URLs(), 1))
	follow(t, l, copyIndex(t, baseIndex(t)))
	other := openWriter(t, otherIndex(t))
	defer other.Close()
	log, _ := newLogger()
	if _, err := Follow(context.Background(), l, other, DefaultFollowOptions(log)); !errorsIs(err, ErrForeign) {
		t.Errorf("another index following the log: %v, want ErrForeign", err)
	}
}
