package live

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/kernels/cpu"
)

var kills = flag.Int("kills", 6, "crash campaign: how many times to kill -9 the writer (benchmarks/live runs 60)")

// The child writer: commits batches until killed, printing "ack i" after
// batch i's commit returns. Batch i of run r adds r<r>-b<i>-x and -y and
// deletes the x of batch i−3; checkpoints are frequent, so kills land in
// them too, and every 8th batch is followed by a refresh of the index's
// test section and a checkpoint, which writes it from memory. Every 3rd
// starts a merge beside the commits, announced by "merging" and "merged".
func TestCrashChild(t *testing.T) {
	dir, run := os.Getenv("GLEANER_CRASH_DIR"), os.Getenv("GLEANER_CRASH_RUN")
	if dir == "" {
		t.Skip("the crash campaign's child process")
	}
	o := DefaultOptions(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	o.CheckpointBytes, o.Refresh.Backend = 16<<10, cpu.New()
	w, err := Open(context.Background(), dir, o)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	for i := 1; ; i++ {
		if _, err := w.Commit(context.Background(), crashBatch(run, i)); err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
		fmt.Printf("ack %d\n", i)
		if i%3 == 0 {
			go crashMerge(w)
		}
		if i%8 == 0 {
			_, err := w.Refresh(context.Background())
			if err == nil {
				err = w.Checkpoint(context.Background())
			}
			if err != nil {
				fmt.Println("error", err)
				os.Exit(3)
			}
		}
	}
}

// crashMerge merges beside the child's commits, saying when it starts
// and ends (one line each, so a kill between them landed in a merge).
func crashMerge(w *Writer) {
	if !w.rfMu.TryLock() { // one at a time, or a refresh is running
		return
	}
	w.rfMu.Unlock()
	fmt.Println("merging")
	if _, err := w.Merge(context.Background()); err != nil && !errors.Is(err, ErrMergeAbandoned) {
		fmt.Println("error", err)
		os.Exit(3)
	}
	fmt.Println("merged")
}

func crashBatch(run string, i int) *Batch {
	var b Batch
	for _, side := range []string{"x", "y"} {
		id := crashID(run, i, side)
		b.Add(passage(id, fmt.Sprintf("marker%sb%d%s crash campaign passage", run, i, side)))
	}
	if i > 3 {
		b.Delete(crashID(run, i-3, "x"))
	}
	return &b
}

func crashID(run string, i int, side string) string { return fmt.Sprintf("r%s-b%d-%s", run, i, side) }

// TestCrashCampaign kills a writing process at random moments (commits,
// checkpoints, log rotations) and reopens the index each time: every
// acknowledged batch is there, no batch is there in part, the batches
// present are a prefix of those sent, and the index on disk verifies.
func TestCrashCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := indexWithSection(t)
	rng := rand.New(rand.NewPCG(17, uint64(*kills)))
	last := map[string]int{} // run → batches present after its crash
	inCheckpoint, inMerge, fresh := 0, 0, 0
	for k := range *kills {
		run := strconv.Itoa(k)
		acked, merging := crashOnce(t, dir, run, 40+rng.IntN(400))
		if merging {
			inMerge++
		}
		if len(store.Debris(dir)) > 0 {
			inCheckpoint++ // the kill stopped a checkpoint's write
		}
		if onDisk, err := index.Open(dir, store.OpenOptions{}); err != nil {
			t.Fatalf("the folder after kill %d: %v", k, err)
		} else {
			if checkSection(t, onDisk) {
				fresh++
			}
			onDisk.Close()
		}
		w := reopen(t, dir)
		last[run] = checkRun(t, w.Index(), run, acked)
		checkSection(t, w.Index())
		if k%5 == 4 || k == *kills-1 {
			for r, j := range last {
				if got := checkRun(t, w.Index(), r, j); got != j {
					t.Fatalf("run %s: %d batches after later runs, %d before", r, got, j)
				}
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("kill %d: %d acknowledged, %d present", k, acked, last[run])
	}
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		t.Fatalf("the index after the campaign: %v", err)
	}
	ix.Close()
	t.Logf("%d kills, %d of them during a checkpoint's write, %d during a merge; the refreshed section fresh after %d", *kills, inCheckpoint, inMerge, fresh)
}

// crashOnce runs the child until after ms milliseconds and kills it with
// SIGKILL, returning the last batch it acknowledged and whether a merge
// was running.
func crashOnce(t *testing.T, dir, run string, ms int) (int, bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), "GLEANER_CRASH_DIR="+dir, "GLEANER_CRASH_RUN="+run)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acks := make(chan int, 1)
	merging := 0 // merges started less those ended
	go func() {
		n := 0
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			switch v, ok := strings.CutPrefix(line, "ack "); {
			case ok:
				n, _ = strconv.Atoi(v)
			case line == "merging":
				merging++
			case line == "merged":
				merging--
			case strings.HasPrefix(line, "error"):
				t.Errorf("child: %s", line)
			}
		}
		acks <- n
	}()
	time.Sleep(time.Duration(ms) * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	n := <-acks
	cmd.Wait()
	return n, merging > 0
}

func reopen(t *testing.T, dir string) *Writer {
	t.Helper()
	o, _ := testOptions(t)
	w, err := Open(context.Background(), dir, o)
	if err != nil {
		t.Fatalf("reopen after kill -9: %v", err)
	}
	return w
}

// checkSection checks the test section after a kill: stale, or fresh and
// made for this index (its Load refuses one made for another size).
func checkSection(t *testing.T, ix *index.Index) (fresh bool) {
	t.Helper()
	v, err := sectionValue(ix)
	switch {
	case errors.Is(err, index.ErrNotBuilt):
		return false
	case err != nil:
		t.Fatalf("the test section after a kill: %v", err)
	case v != int64(ix.N()):
		t.Fatalf("the test section says %d nodes, the index has %d", v, ix.N())
	}
	return true
}

// checkRun verifies run's batches in ix and returns how many are there.
func checkRun(t *testing.T, ix *index.Index, run string, acked int) int {
	t.Helper()
	has := func(i int, side string) bool { _, ok := ix.Lookup(crashID(run, i, side)); return ok }
	j := 0
	for has(j+1, "y") {
		j++
	}
	if j < acked {
		t.Fatalf("run %s: batch %d was acknowledged, only %d are in the index", run, acked, j)
	}
	for i := 1; i <= j+5; i++ {
		wantY, wantX := i <= j, i <= j && i > j-3
		if has(i, "y") != wantY || has(i, "x") != wantX {
			t.Fatalf("run %s, batch %d of %d present: x %v y %v, want x %v y %v (a batch applied in part)", run, i, j, has(i, "x"), has(i, "y"), wantX, wantY)
		}
	}
	if j > 0 {
		hits := ix.BM25.Search(fmt.Sprintf("marker%sb%dy", run, j), 1)
		if len(hits) != 1 || ix.NodeID(int(hits[0].Index)) != crashID(run, j, "y") {
			t.Fatalf("run %s: bm25 does not find batch %d's passage: %v", run, j, hits)
		}
	}
	return j
}
