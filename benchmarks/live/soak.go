package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/live"
)

// soak runs a live writer for d under a steady stream of changes that
// keeps the index's size about level (30 % adds, 40 % replaces, 30 %
// deletes, batches of batch changes from writers goroutines) while BM25
// queries run at rate per second on the current index, and every report
// interval prints what memory and disk hold: the process's RSS, the Go
// heap, the log and the index folder. It shows whether anything grows
// with the number of changes rather than with the index.
func soak(c *corpus.Corpus, dir string, d, report time.Duration, rate, writers, batch int, seed uint64, memProfile string) error {
	ctx := context.Background()
	w, err := openWriter(ctx, dir)
	if err != nil {
		return err
	}
	var acked atomic.Int64
	commitLat := &latencyLog{}
	ws := commitBeside(ctx, w, c, seed, writers, batch, func(d time.Duration, applied bool) {
		commitLat.add(d) // every commit's, conflicts included
		if applied {
			acked.Add(int64(batch))
		}
	})
	lat := &latencyLog{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); lat.run(w, c.Queries, rate, ws.stop) }()
	fmt.Printf("\n%8s %10s %8s %10s %10s %10s %12s %6s %10s %10s %10s %7s %6s\n", "t", "changes", "nodes", "rss", "go heap", "log", "index+log", "ckpts", "q p99",
		"commit p99", "commit max", "merges", "inline")
	start := time.Now()
	tick := time.NewTicker(report)
	defer tick.Stop()
	var ferr error
loop:
	for time.Since(start) < d {
		select {
		case ferr = <-ws.errs:
			break loop
		case <-tick.C:
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		st := w.Stats()
		cp99, cmax := commitLat.take()
		fmt.Printf("%8s %10d %8d %10s %9.0fM %9.1fM %11.1fM %6d %8.2fms %8.0fms %8.0fms %7d %6d\n", time.Since(start).Round(time.Second), acked.Load(), st.Nodes,
			procStatus("VmRSS"), float64(ms.HeapInuse)/(1<<20), float64(st.LogBytes)/(1<<20), float64(folderBytes(dir)+folderBytes(index.LogDir(dir)))/(1<<20),
			st.Checkpoints, lat.p99().Seconds()*1000, cp99.Seconds()*1000, cmax.Seconds()*1000, st.Merges, st.Compactions-st.Merges)
	}
	if err := ws.Stop(); ferr == nil {
		ferr = err
	}
	wg.Wait()
	fmt.Printf("peak RSS %s; %d changes in %v\n", procStatus("VmHWM"), acked.Load(), time.Since(start).Round(time.Second))
	if memProfile != "" {
		if err := writeHeapProfile(memProfile); err != nil {
			return err
		}
	}
	if ferr != nil {
		w.Close()
		return ferr
	}
	return w.Close()
}

// isConflict reports a batch refused because another writer changed one
// of its documents first (the writers draw from the same index).
func isConflict(err error) bool {
	return errors.Is(err, live.ErrNotFound) || errors.Is(err, live.ErrExists)
}

// latencyLog times BM25 queries on a writer's current index.
type latencyLog struct {
	mu  sync.Mutex
	lat []time.Duration
}

func (l *latencyLog) run(w *live.Writer, qs []corpus.Query, rate int, stop chan struct{}) {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		t := time.Now()
		w.Index().BM25.Search(qs[i%len(qs)].Text, 10)
		l.add(time.Since(t))
	}
}

func (l *latencyLog) add(d time.Duration) {
	l.mu.Lock()
	l.lat = append(l.lat, d)
	l.mu.Unlock()
}

// take returns the 99th percentile and the longest since the last call.
func (l *latencyLog) take() (p99, longest time.Duration) {
	l.mu.Lock()
	s := l.lat
	l.lat = nil
	l.mu.Unlock()
	slices.Sort(s)
	if len(s) == 0 {
		return 0, 0
	}
	return pct(s, 0.99), s[len(s)-1]
}

// p99 is the 99th percentile since the last call.
func (l *latencyLog) p99() time.Duration {
	p, _ := l.take()
	return p
}

// folderBytes is the size of the files under dir.
func folderBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// writeHeapProfile writes the live heap (after a collection) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
