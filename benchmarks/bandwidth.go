package benchmarks

import (
	"runtime"
	"sync"
	"time"

	"github.com/gleaner-rag/gleaner/index"
)

// CopyBandwidth measures memory copy bandwidth in bytes per second (bytes
// copied, i.e. read, per second) with one goroutine per core over buffers
// far larger than the last-level cache, taking the best of reps runs.
func CopyBandwidth(bytes int, reps int) float64 {
	workers := runtime.GOMAXPROCS(0)
	chunk := bytes / workers
	src, dst := make([][]byte, workers), make([][]byte, workers)
	for w := range src {
		src[w], dst[w] = make([]byte, chunk), make([]byte, chunk)
		for i := 0; i < chunk; i += 4096 {
			src[w][i], dst[w][i] = 1, 1 // fault the pages in
		}
	}
	best := 0.0
	for r := 0; r < reps; r++ {
		var wg sync.WaitGroup
		start := time.Now()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() { defer wg.Done(); copy(dst[w], src[w]) }()
		}
		wg.Wait()
		best = max(best, float64(chunk*workers)/time.Since(start).Seconds())
	}
	return best
}

var (
	bwOnce sync.Once
	bwVal  float64
)

// MachineCopyBandwidth is CopyBandwidth over 1 GiB, measured once per process.
func MachineCopyBandwidth() float64 {
	bwOnce.Do(func() { bwVal = CopyBandwidth(1<<30, 5) })
	return bwVal
}

// fileSHA is the tokenizer hash an index records (index.TokenizerHash).
func fileSHA(path string) (string, error) { return index.TokenizerHash(path) }
