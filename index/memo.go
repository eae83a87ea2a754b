package index

import "sync"

// Memo returns the value stored under key, making it with make the first
// time (concurrent callers of one key wait for that one make). It lets
// packages above the index keep derived structures (the metadata columns
// filters read) for the index's lifetime.
func (ix *Index) Memo(key string, make func() any) any {
	ix.memoMu.Lock()
	e, ok := ix.memo[key]
	if !ok {
		if ix.memo == nil {
			ix.memo = map[string]*memoEntry{}
		}
		e = &memoEntry{}
		ix.memo[key] = e
	}
	ix.memoMu.Unlock()
	e.once.Do(func() { e.v = make() })
	return e.v
}

type memoEntry struct {
	once sync.Once
	v    any
}
