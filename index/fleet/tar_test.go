package fleet

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-rag/gleaner/index/fleet/fleettest"
	"github.com/gleaner-rag/gleaner/internal/testcert"
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

// TestConnectOverTLS: a cluster that speaks TLS is reached with the CA
// file; without it, or with a plain URL, the connection is refused with
// the cause named.
func TestConnectOverTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	testcert.Write(t, certFile, keyFile, 1)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cl := fleettest.StartTLS(t, &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	url := "tls://" + strings.TrimPrefix(cl.URL(0), "nats://")
	log, _ := newLogger()
	cfg := DefaultConfig(url, log)
	cfg.Replicas, cfg.CAFile = 1, certFile
	c, err := Connect(context.Background(), cfg)
	if err != nil {
		t.Fatalf("TLS with the CA: %v", err)
	}
	defer c.Close()
	l, err := c.OpenLog(context.Background(), "tls")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Publish(context.Background(), batchOf([]change{{kind: "add", id: "x", text: "over tls"}})); err != nil {
		t.Fatalf("publish over TLS: %v", err)
	}
	cfg.CAFile = ""
	if c, err := Connect(context.Background(), cfg); err == nil {
		c.Close()
		t.Error("TLS without the CA was accepted")
	}
	cfg.URLs, cfg.CAFile = "http://"+strings.TrimPrefix(url, "tls://"), certFile
	if _, err := Connect(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "want nats://") {
		t.Errorf("an http URL: %v", err)
	}
	cfg.URLs, cfg.CertFile = url, certFile
	if _, err := Connect(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "both") {
		t.Errorf("a certificate without its key: %v", err)
	}
}

// TestRecreatedStreamStopsReplica: a stream deleted and created again is
// another log: a replica of the old one stops rather than apply the new
// one's batches from its old position.
func TestRecreatedStreamStopsReplica(t *testing.T) {
	cl := fleettest.Start(t, 1)
	conn := connect(t, cl.URLs(), 1)
	l := openLog(t, conn)
	a := follow(t, l, copyIndex(t, baseIndex(t)))
	p := &published{bySeq: map[uint64][]change{}}
	p.publish(t, l, 71, 5)
	waitApplied(t, 5, a)
	if _, err := l.PutSnapshot(context.Background(), a.w, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := conn.js.DeleteStream(context.Background(), l.name); err != nil {
		t.Fatal(err)
	}
	l2, err := conn.OpenLog(context.Background(), l.index)
	if err != nil {
		t.Fatal(err)
	}
	p2 := &published{bySeq: map[uint64][]change{}}
	p2.publish(t, l2, 72, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.r.Wait(ctx, 10); !errorsIs(err, ErrForeign) {
		t.Fatalf("the replica of the deleted stream: %v (applied %d), want it stopped with ErrForeign", err, a.r.Applied())
	}
	if got := a.r.Applied(); got != 5 {
		t.Errorf("it took batches up to %d of the new stream", got)
	}
	if snaps, err := l2.Snapshots(context.Background()); err != nil || len(snaps) != 0 {
		t.Errorf("the new stream lists %d snapshots (%v): the old stream's are another log's", len(snaps), err)
	}
	// The new log holds batches but names no index it began from: no
	// index may claim it now.
	w := openWriter(t, copyIndex(t, baseIndex(t)))
	defer w.Close()
	log, _ := newLogger()
	if _, err := Follow(context.Background(), l2, w, DefaultFollowOptions(log)); !errorsIs(err, ErrForeign) {
		t.Errorf("claiming a log that holds batches: %v, want ErrForeign", err)
	}
}

// TestConnectWithCreds: a cluster that admits only JWT users is reached
// with a credentials file, and refuses a connection without one.
func TestConnectWithCreds(t *testing.T) {
	cl, creds := fleettest.StartWithCreds(t)
	log, _ := newLogger()
	cfg := DefaultConfig(cl.URL(0), log)
	cfg.Replicas = 1
	if c, err := Connect(context.Background(), cfg); err == nil {
		c.Close()
		t.Fatal("a connection without credentials was accepted")
	}
	cfg.CredsFile = creds
	c, err := Connect(context.Background(), cfg)
	if err != nil {
		t.Fatalf("with the credentials file: %v", err)
	}
	defer c.Close()
	l, err := c.OpenLog(context.Background(), "creds")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Publish(context.Background(), batchOf([]change{{kind: "add", id: "x", text: "with creds"}})); err != nil {
		t.Fatalf("publish with credentials: %v", err)
	}
}
