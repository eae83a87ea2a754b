package memo

import (
	"container/list"
	"sync"
)

// LRU keeps the values of the last Max keys asked for, each made once
// however many goroutines ask at the same time; the least recently used
// is dropped beyond Max. It bounds what per-filter caches hold. It is safe
// for concurrent use.
type LRU[K comparable, V any] struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *lruEntry[K, V], most recent first
	by    map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key  K
	once sync.Once
	v    V
	made bool // make returned (it may have panicked instead)
}

// NewLRU returns an empty LRU of at most n values (at least 1).
func NewLRU[K comparable, V any](n int) *LRU[K, V] {
	return &LRU[K, V]{max: max(n, 1), order: list.New(), by: map[K]*list.Element{}}
}

// Get returns the value under key, making it with make if it is not kept
// (concurrent callers of one key wait for that one make).
func (c *LRU[K, V]) Get(key K, make func() V) V {
	c.mu.Lock()
	el, ok := c.by[key]
	if ok {
		c.order.MoveToFront(el)
	} else {
		el = c.order.PushFront(&lruEntry[K, V]{key: key})
		c.by[key] = el
		if c.order.Len() > c.max {
			last := c.order.Back()
			c.order.Remove(last)
			delete(c.by, last.Value.(*lruEntry[K, V]).key)
		}
	}
	c.mu.Unlock()
	e := el.Value.(*lruEntry[K, V])
	func() {
		defer func() {
			if !e.made { // make panicked, here or for a caller waiting with us: forget the entry
				c.drop(el)
			}
		}()
		e.once.Do(func() { e.v, e.made = make(), true })
	}()
	if !e.made {
		return make()
	}
	return e.v
}

// drop removes the entry el if it is still kept.
func (c *LRU[K, V]) drop(el *list.Element) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := el.Value.(*lruEntry[K, V]).key
	if c.by[key] == el {
		c.order.Remove(el)
		delete(c.by, key)
	}
}

// Len is how many values are kept.
func (c *LRU[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
