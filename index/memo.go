package index

// Memo returns the value stored under key, making it with make the first
// time (concurrent callers of one key wait for that one make). It lets
// packages above the index keep derived structures (the metadata columns
// filters read) for the index's lifetime.
func (ix *Index) Memo(key string, make func() any) any { return ix.memo.Get(key, make) }
