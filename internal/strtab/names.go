// Package strtab holds many strings and small sets of numbers in a few
// arrays the Go collector does not scan, for state kept for a live
// index's life: maps and slices keyed by string cost every collection
// time in proportion to their entries.
package strtab

import (
	"hash/maphash"
	"unsafe"
)

// Names numbers strings densely, so that a caller holds its sets as
// lists of numbers (Sets). The strings lie one after another in one
// byte array, found by hash: maps and sets keyed by string were most of
// a live index's pointer-rich heap, which the collector scans on every
// cycle, and here it sees two objects. A removed name's number is reused
// only after Release: until then a number still names at most one
// string, the one it was given.
type Names struct {
	hash  func(string) uint64
	first map[uint64]int32 // hash → a number of that hash
	chain []int32          // number → the next number of the same hash (−1: none)
	bytes []byte           // the names, one after another; never written over
	at    []nameAt         // number → where its name lies
	dead  int              // bytes of removed names
	free  []int32          // numbers to reuse
	held  []int32          // numbers removed since the last release
}

// nameAt is where a name lies in bytes (n −1: the number is not in use).
type nameAt struct {
	off int
	n   int32
}

func NewNames() Names {
	seed := maphash.MakeSeed()
	return Names{hash: func(s string) uint64 { return maphash.String(seed, s) }, first: map[uint64]int32{}}
}

// Name is number v's name. It shares the array's bytes, which are never
// written over (a compaction makes a new array), so it stays valid.
func (t *Names) Name(v int32) string {
	a := t.at[v]
	if a.n <= 0 {
		return ""
	}
	return unsafe.String(&t.bytes[a.off], int(a.n))
}

// ID is s's number, if it has one.
func (t *Names) ID(s string) (int32, bool) {
	v, ok := t.first[t.hash(s)]
	for ok && v >= 0 {
		if t.Name(v) == s {
			return v, true
		}
		v = t.chain[v]
	}
	return -1, false
}

// Has reports whether v is a number in use.
func (t *Names) Has(v int32) bool { return v >= 0 && int(v) < len(t.at) && t.at[v].n >= 0 }

// Add gives s a number (s must have none) and returns it.
func (t *Names) Add(s string) int32 {
	v := Take(&t.free, len(t.at))
	if int(v) == len(t.at) {
		t.at, t.chain = append(t.at, nameAt{}), append(t.chain, -1)
	}
	t.compactIfSparse(len(s))
	t.at[v] = nameAt{off: len(t.bytes), n: int32(len(s))}
	t.bytes = append(t.bytes, s...)
	h := t.hash(s)
	if w, ok := t.first[h]; ok {
		t.chain[v] = w
	} else {
		t.chain[v] = -1
	}
	t.first[h] = v
	return v
}

// Remove takes v's number back (a number not in use is ignored).
func (t *Names) Remove(v int32) {
	if !t.Has(v) {
		return
	}
	h := t.hash(t.Name(v))
	if w := t.first[h]; w == v {
		if t.chain[v] >= 0 {
			t.first[h] = t.chain[v]
		} else {
			delete(t.first, h)
		}
	} else {
		for t.chain[w] != v {
			w = t.chain[w]
		}
		t.chain[w] = t.chain[v]
	}
	t.dead += int(t.at[v].n)
	t.at[v], t.chain[v] = nameAt{n: -1}, -1
	t.held = append(t.held, v)
}

// Release makes the numbers removed so far free for reuse.
func (t *Names) Release() {
	t.free = append(t.free, t.held...)
	t.held = t.held[:0]
}

// Size is one more than the highest number given.
func (t *Names) Size() int { return len(t.at) }

// compactIfSparse copies the names in use into a new array when removed
// ones are half of it and adding more bytes would grow it.
func (t *Names) compactIfSparse(more int) {
	if len(t.bytes)+more <= cap(t.bytes) || t.dead < 4096 || 2*t.dead < len(t.bytes) {
		return
	}
	bytes := make([]byte, 0, 2*(len(t.bytes)-t.dead)+more)
	for v, a := range t.at {
		if a.n > 0 {
			t.at[v].off = len(bytes)
			bytes = append(bytes, t.bytes[a.off:a.off+int(a.n)]...)
		}
	}
	t.bytes, t.dead = bytes, 0
}

// Take takes a number from free, or is used (the count of numbers in
// use) when free is empty: numbers are then 0 to used−1.
func Take(free *[]int32, used int) int32 {
	if k := len(*free); k > 0 {
		v := (*free)[k-1]
		*free = (*free)[:k-1]
		return v
	}
	return int32(used)
}
