package fuseattn

import (
	"container/list"
	"sync"
)

// StateCache keeps evidence token states across queries (they do not
// depend on the query), least recently used first out, within a byte
// budget. It is safe for concurrent use.
type StateCache struct {
	mu      sync.Mutex
	budget  int64
	used    int64
	order   *list.List // front = most recent; values are *cacheEntry
	entries map[int32]*list.Element
	hits    int64
	misses  int64
}

type cacheEntry struct {
	node   int32
	states []float32
}

// NewStateCache makes a cache holding at most budget bytes of states (0
// disables caching).
func NewStateCache(budget int64) *StateCache {
	return &StateCache{budget: max(budget, 0), order: list.New(), entries: map[int32]*list.Element{}}
}

// Get returns node's states and whether they were cached.
func (c *StateCache) Get(node int32) ([]float32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[node]
	if !ok {
		c.misses++
		return nil, false
	}
	c.hits++
	c.order.MoveToFront(e)
	return e.Value.(*cacheEntry).states, true
}

// Put stores node's states, evicting the least recently used entries; a
// state larger than the whole budget is not kept.
func (c *StateCache) Put(node int32, states []float32) {
	size := int64(4 * len(states))
	c.mu.Lock()
	defer c.mu.Unlock()
	if size > c.budget {
		return
	}
	if e, ok := c.entries[node]; ok {
		c.used -= int64(4 * len(e.Value.(*cacheEntry).states))
		c.order.Remove(e)
		delete(c.entries, node)
	}
	for c.used+size > c.budget {
		last := c.order.Back()
		old := last.Value.(*cacheEntry)
		c.used -= int64(4 * len(old.states))
		c.order.Remove(last)
		delete(c.entries, old.node)
	}
	c.entries[node] = c.order.PushFront(&cacheEntry{node: node, states: states})
	c.used += size
}

// CacheStats are a cache's counters.
type CacheStats struct {
	Entries      int
	Bytes        int64
	Hits, Misses int64
}

// Stats returns the counters.
func (c *StateCache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Entries: len(c.entries), Bytes: c.used, Hits: c.hits, Misses: c.misses}
}
