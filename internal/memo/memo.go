// Package memo keeps values derived from an immutable thing (an index, a
// node set) for its lifetime, each made once however many goroutines ask.
package memo

import "sync"

// Map is a set of lazily made values by key; the zero value is ready. It
// is safe for concurrent use.
type Map struct {
	mu sync.Mutex
	m  map[string]*entry
}

type entry struct {
	once sync.Once
	v    any
}

// Get returns the value under key, making it with make the first time
// (concurrent callers of one key wait for that one make).
func (m *Map) Get(key string, make func() any) any {
	m.mu.Lock()
	e, ok := m.m[key]
	if !ok {
		if m.m == nil {
			m.m = map[string]*entry{}
		}
		e = &entry{}
		m.m[key] = e
	}
	m.mu.Unlock()
	e.once.Do(func() { e.v = make() })
	return e.v
}
