package lexical

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// forChunks calls fn on consecutive ranges [lo, hi) of at most chunk items
// covering [0, n), on GOMAXPROCS goroutines. Each range goes to exactly one
// call, so a caller that writes only its range's outputs gets the same
// result however many goroutines run.
func forChunks(n, chunk int, fn func(lo, hi int)) {
	forWorkerChunks(n, chunk, chunkWorkers(n, chunk), func(_, lo, hi int) { fn(lo, hi) })
}

// chunkWorkers is how many goroutines to run on n items in chunks.
func chunkWorkers(n, chunk int) int {
	return max(1, min(runtime.GOMAXPROCS(0), (n+chunk-1)/chunk))
}

// forWorkerChunks is forChunks on a given number of goroutines, naming the
// goroutine (0 ≤ worker < workers) so that callers can keep state per
// goroutine, sized before the call; each goroutine's ranges ascend.
func forWorkerChunks(n, chunk, workers int, fn func(worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	if workers <= 1 {
		for lo := 0; lo < n; lo += chunk {
			fn(0, lo, min(lo+chunk, n))
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(int64(chunk))) - chunk
				if lo >= n {
					return
				}
				fn(w, lo, min(lo+chunk, n))
			}
		}()
	}
	wg.Wait()
}
