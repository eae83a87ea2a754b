package cuda

import (
	"math/bits"
	"sync"

	"github.com/gleaner-rag/gleaner/engine"
)

// Pool is the cuda backend's caching device allocator: a freed block goes
// back to a free list of its size class (the next power of two, at least
// MinBlock bytes) and the next request of that class reuses it, so the
// per-query buffers of a retrieval loop stop calling the driver after the
// first queries. Free lists are per queue (stream): a block freed on one
// is reused only by later work on the same queue, which the stream orders
// after the block's last use, so no event is needed. Blocks are returned
// to the driver only by Trim (of every queue: freeing device memory waits
// for the device). It is safe for concurrent use and device-agnostic
// (alloc and free are the driver's), so it is tested on the CPU.
type Pool[P comparable] struct {
	mu    sync.Mutex
	alloc func(bytes int64) (P, error)
	free  func(P)
	lists map[poolKey][]P // (queue, size class) → free blocks
	stats PoolStats
}

// PoolStats are a pool's counters (the backend's engine.MemoryStats).
type PoolStats = engine.MemoryStats

type poolKey struct {
	queue int
	class int64
}

// MinBlock is the smallest size class, in bytes.
const MinBlock = 256

// NewPool returns a pool over a driver's alloc and free.
func NewPool[P comparable](alloc func(bytes int64) (P, error), free func(P)) *Pool[P] {
	return &Pool[P]{alloc: alloc, free: free, lists: map[poolKey][]P{}}
}

// Class is the size class of a request: the next power of two ≥ bytes, at
// least MinBlock; above LargeBlock, the next multiple of LargeStep (a
// power of two would waste up to half of a large index matrix).
func Class(bytes int64) int64 {
	switch {
	case bytes <= MinBlock:
		return MinBlock
	case bytes > LargeBlock:
		return (bytes + LargeStep - 1) / LargeStep * LargeStep
	}
	return 1 << (64 - bits.LeadingZeros64(uint64(bytes-1)))
}

// LargeBlock and LargeStep bound the power-of-two classes.
const (
	LargeBlock = 64 << 20
	LargeStep  = 2 << 20
)

// Get returns a block of at least bytes (its class size) for work on
// queue, and that size.
func (p *Pool[P]) Get(queue int, bytes int64) (P, int64, error) {
	c := Class(bytes)
	k := poolKey{queue, c}
	p.mu.Lock()
	p.stats.Allocs++
	if l := p.lists[k]; len(l) > 0 {
		b := l[len(l)-1]
		p.lists[k] = l[:len(l)-1]
		p.stats.Reuses++
		p.stats.InUse += c
		p.stats.Cached -= c
		p.mu.Unlock()
		return b, c, nil
	}
	p.mu.Unlock()
	b, err := p.alloc(c) // outside the lock: the driver may be slow
	if err != nil {
		p.Trim() // out of memory while other classes hold blocks: give them back and try once more
		if b, err = p.alloc(c); err != nil {
			var zero P
			return zero, 0, err
		}
	}
	p.mu.Lock()
	p.stats.DriverAllocs++
	p.stats.InUse += c
	p.mu.Unlock()
	return b, c, nil
}

// Put returns a block of class size c (as Get returned it) to queue's free
// list.
func (p *Pool[P]) Put(queue int, b P, c int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := poolKey{queue, c}
	p.lists[k] = append(p.lists[k], b)
	p.stats.InUse -= c
	p.stats.Cached += c
}

// Trim gives every cached block back to the driver.
func (p *Pool[P]) Trim() {
	p.mu.Lock()
	lists := p.lists
	p.lists = map[poolKey][]P{}
	p.stats.Cached = 0
	p.mu.Unlock()
	for _, l := range lists {
		for _, b := range l {
			p.free(b)
		}
	}
}

// Stats returns the pool's counters.
func (p *Pool[P]) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}
