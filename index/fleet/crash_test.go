package fleet

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gleaner-rag/gleaner/index/fleet/fleettest"
)

// The replica a crash test kills runs in a child process: this test
// binary, told what to do by the environment.
const (
	childEnv  = "GLEANER_FLEET_CHILD" // follow or snapshot
	childDir  = "GLEANER_FLEET_DIR"
	childURLs = "GLEANER_FLEET_URLS"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

// runChild follows the log into the index at childDir until killed;
// in snapshot mode it uploads snapshots one after another meanwhile.
func runChild(mode string) int {
	log, _ := newLogger()
	ctx := context.Background()
	cfg := DefaultConfig(os.Getenv(childURLs), log)
	c, err := Connect(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	l, err := c.OpenLog(ctx, "docs.v1")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	dir := os.Getenv(childDir)
	w, err := writerAt(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if _, err := Follow(ctx, l, w, DefaultFollowOptions(log)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("following")
	for mode == "snapshot" {
		if _, err := l.PutSnapshot(ctx, w, filepath.Dir(dir)); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	select {}
}

// startChild starts a replica process and waits until it follows.
func startChild(t *testing.T, mode, dir, urls string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childDir+"="+dir, childURLs+"="+urls)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len("following"))
	if _, err := out.Read(buf); err != nil || string(buf) != "following" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the replica process did not start following: %q %v", buf, err)
	}
	return cmd
}

func kill(cmd *exec.Cmd) {
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
}

// TestReplicaKilledDuringApply: a replica process is killed (SIGKILL) at
// seeded random moments while writes stream in, and restarted; at the
// end it holds every acknowledged write, none twice, and equals a replica
// that never stopped.
func TestReplicaKilledDuringApply(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills processes")
	}
	cl := fleettest.Start(t, 3)
	base := baseIndex(t)
	l := openLog(t, connect(t, cl.URLs(), 3))
	a := follow(t, l, copyIndex(t, base))
	dir := copyIndex(t, base)
	p := &published{bySeq: map[uint64][]change{}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); p.publish(t, l, 51, 300) }()
	rng := rand.New(rand.NewPCG(51, 1))
	for kills := 0; kills < 8; kills++ {
		cmd := startChild(t, "follow", dir, cl.URLs())
		time.Sleep(time.Duration(20+rng.IntN(200)) * time.Millisecond)
		kill(cmd)
	}
	wg.Wait()
	_, last, err := l.Bounds(context.Background())
	if err != nil || last != 300 {
		t.Fatalf("log ends at %d (%v), want 300", last, err)
	}
	w := openWriter(t, dir)
	took := w.Source()
	w.Close()
	if took == 0 {
		t.Fatal("the killed processes applied nothing: the kills did not land during apply")
	}
	t.Logf("the killed processes took %d of %d batches", took, last)
	b := follow(t, l, dir)
	waitApplied(t, last, a, b)
	m, _ := p.expected(t, model{})
	sameAs(t, m, a, b)
}

// TestReplicaKilledDuringSnapshot: a replica process uploading snapshots
// is killed at seeded random moments; the snapshot store holds only
// whole snapshots, and the newest restores and catches up.
func TestReplicaKilledDuringSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills processes")
	}
	cl := fleettest.Start(t, 3)
	base := baseIndex(t)
	l := openLog(t, connect(t, cl.URLs(), 3))
	a := follow(t, l, copyIndex(t, base))
	dir := copyIndex(t, base)
	p := &published{bySeq: map[uint64][]change{}}
	p.publish(t, l, 61, 40)
	rng := rand.New(rand.NewPCG(61, 1))
	for kills := 0; kills < 5; kills++ {
		cmd := startChild(t, "snapshot", dir, cl.URLs())
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		kill(cmd)
		p.publish(t, l, 62+uint64(kills), 5)
	}
	snaps, err := l.Snapshots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) == 0 {
		t.Fatal("no snapshot finished before the kills: lengthen the waits")
	}
	restored := filepath.Join(t.TempDir(), "restored")
	s, err := l.Restore(context.Background(), restored)
	if err != nil {
		t.Fatalf("restore after killed uploads: %v", err)
	}
	// A put whose last message reached the server just before the kill
	// can complete after the listing above: the newest is the newest of a
	// listing taken after the restore, never older than the first.
	after, err := l.Snapshots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Seq != after[0].Seq || s.Seq < snaps[0].Seq {
		t.Errorf("restored the snapshot at %d, want the newest (%d; %d before the restore): one was refused", s.Seq, after[0].Seq, snaps[0].Seq)
	}
	c := follow(t, l, restored)
	_, last, _ := l.Bounds(context.Background())
	waitApplied(t, last, a, c)
	sameAs(t, nil, a, c)
}
