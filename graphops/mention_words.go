package graphops

import (
	"github.com/gleaner-rag/gleaner/internal/strtab"
	"hash/maphash"
	"slices"
	"unicode"
	"unicode/utf8"
)

// wordIndex indexes the words of passages' texts that do not start
// lower-case: for each, the passages holding it, as ascending slot
// numbers. A map of sets keyed by passage was most of a live index's Go
// heap, all of it pointers the collector scans on every cycle (250 MB at
// 72,000 passages); lists of slots, all in one set pool, are two objects
// to it. A removed passage's
// slot stays in the lists, marked free, until they hold as many free
// entries as live ones: then they are compacted and the slots renumbered.
type wordIndex struct {
	slot    map[int32]int32 // passage number → slot
	keys    []int32         // slot → passage number (−1: removed)
	count   []int32         // slot → its number of list entries (−1: removed)
	removed int             // removed slots
	// lists holds a word's hash → the number in pool of its list: the
	// slots holding it, ascending. Words of one hash share a list, which
	// only gives findOld more candidates to check; no word is kept.
	lists   map[uint64]int32
	hash    func(string) uint64
	pool    strtab.Sets
	unused  []int32         // list numbers to reuse
	entries int             // list entries, free ones included
	free    int             // list entries of removed slots
	seen    map[uint64]bool // scratch for add
	least   int             // free entries or removed slots before a compaction
}

func newWordIndex() wordIndex {
	seed := maphash.MakeSeed()
	return wordIndex{slot: map[int32]int32{}, lists: map[uint64]int32{}, seen: map[uint64]bool{}, least: 1024,
		hash: func(w string) uint64 { return maphash.String(seed, w) }}
}

// add indexes passage key's text under a new slot (an indexed key is
// removed first).
func (x *wordIndex) add(key int32, text string) {
	x.remove(key)
	v := int32(len(x.keys))
	x.slot[key] = v
	x.keys = append(x.keys, key)
	clear(x.seen)
	n := int32(0)
	eachWord(text, func(_ int, w string) {
		h := x.hash(w)
		if r, _ := utf8.DecodeRuneInString(w); unicode.IsLower(r) || x.seen[h] {
			return
		}
		x.seen[h] = true
		list, ok := x.lists[h]
		if !ok {
			list = strtab.Take(&x.unused, len(x.lists))
			x.lists[h] = list
		}
		x.pool.Insert(list, v)
		n++
	})
	x.count = append(x.count, n)
	x.entries += int(n)
}

// remove unindexes key (an unknown key is ignored).
func (x *wordIndex) remove(key int32) {
	v, ok := x.slot[key]
	if !ok {
		return
	}
	delete(x.slot, key)
	x.free += int(x.count[v])
	x.removed++
	x.keys[v], x.count[v] = -1, -1
	// half the entries free, or half the slots (passages with no word
	// indexed hold none)
	if (x.free > x.least && 2*x.free > x.entries) || (x.removed > x.least && 2*x.removed > len(x.keys)) {
		x.compact()
	}
}

// compact drops removed slots from the lists and numbers the rest anew,
// in the same order.
func (x *wordIndex) compact() {
	renum := make([]int32, len(x.keys))
	var keys, count []int32
	for v, k := range x.keys {
		renum[v] = -1
		if x.count[v] >= 0 {
			renum[v] = int32(len(keys))
			x.slot[k] = renum[v]
			keys, count = append(keys, k), append(count, x.count[v])
		}
	}
	x.entries = 0
	for w, list := range x.lists {
		x.pool.Renumber(list, renum)
		if x.pool.Size(list) == 0 {
			delete(x.lists, w)
			x.unused = append(x.unused, list)
			continue
		}
		x.entries += x.pool.Size(list)
	}
	x.keys, x.count, x.free, x.removed = keys, count, 0, 0
}

// holdingAll lists the passages whose texts hold every one of words (all
// indexed words), walking the shortest list and looking the slots up in
// the others.
func (x *wordIndex) holdingAll(words []string) []int32 {
	lists := make([][]int32, len(words))
	for i, w := range words {
		if l, ok := x.lists[x.hash(w)]; ok {
			lists[i] = x.pool.Get(l)
		}
	}
	slices.SortFunc(lists, func(a, b []int32) int { return len(a) - len(b) })
	var keys []int32
candidates:
	for _, v := range lists[0] {
		if x.count[v] < 0 {
			continue // removed
		}
		for _, l := range lists[1:] {
			if _, ok := slices.BinarySearch(l, v); !ok {
				continue candidates
			}
		}
		keys = append(keys, x.keys[v])
	}
	return keys
}
