package graphops

import "sync"

// parallelChunks splits [0, n) into k contiguous chunks and runs fn on each
// in its own goroutine (k = 1 runs inline).
func parallelChunks(n, k int, fn func(chunk, lo, hi int)) {
	if k <= 1 {
		fn(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	for c := 0; c < k; c++ {
		lo, hi := c*n/k, (c+1)*n/k
		wg.Add(1)
		go func() { defer wg.Done(); fn(c, lo, hi) }()
	}
	wg.Wait()
}
