package graphops

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// wordIndex indexes the words of passages' texts that do not start
// lower-case: for each, the passages holding it, as ascending slot
// numbers. A map of sets keyed by passage was most of a live index's Go
// heap, all of it pointers the collector scans on every cycle (250 MB at
// 72,000 passages); lists of slots are not scanned. A removed passage's
// slot stays in the lists, marked free, until they hold as many free
// entries as live ones: then they are compacted and the slots renumbered.
type wordIndex struct {
	slot    map[string]int32 // passage key → slot
	keys    []string         // slot → key
	count   []int32          // slot → its number of list entries (−1: removed)
	removed int              // removed slots
	// lists holds word → slots holding it, ascending. Its keys are set
	// once, when a word is new: assigning to a string key that exists
	// stores the key given, which would be a cut of the latest text.
	lists   map[string]*[]int32
	entries int             // list entries, free ones included
	free    int             // list entries of removed slots
	seen    map[string]bool // scratch for add
	least   int             // free entries or removed slots before a compaction
}

func newWordIndex() wordIndex {
	return wordIndex{slot: map[string]int32{}, lists: map[string]*[]int32{}, seen: map[string]bool{}, least: 1024}
}

// add indexes key's text under a new slot (an indexed key is removed
// first).
func (x *wordIndex) add(key, text string) {
	x.remove(key)
	v := int32(len(x.keys))
	x.slot[key] = v
	x.keys = append(x.keys, key)
	clear(x.seen)
	n := int32(0)
	eachWord(text, func(_ int, w string) {
		if r, _ := utf8.DecodeRuneInString(w); unicode.IsLower(r) || x.seen[w] {
			return
		}
		x.seen[w] = true
		list := x.lists[w]
		if list == nil {
			list = new([]int32)
			x.lists[strings.Clone(w)] = list // kept: a cut of text would keep all of text alive
		}
		*list = append(*list, v)
		n++
	})
	clear(x.seen) // its keys are cuts of text
	x.count = append(x.count, n)
	x.entries += int(n)
}

// remove unindexes key (an unknown key is ignored).
func (x *wordIndex) remove(key string) {
	v, ok := x.slot[key]
	if !ok {
		return
	}
	delete(x.slot, key)
	x.free += int(x.count[v])
	x.removed++
	x.keys[v], x.count[v] = "", -1
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
	var keys []string
	var count []int32
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
		kept := (*list)[:0]
		for _, v := range *list {
			if renum[v] >= 0 {
				kept = append(kept, renum[v])
			}
		}
		if len(kept) == 0 {
			delete(x.lists, w)
			continue
		}
		*list = slices.Clip(kept)
		x.entries += len(kept)
	}
	x.keys, x.count, x.free, x.removed = keys, count, 0, 0
}

// holdingAll lists the passages whose texts hold every one of words (all
// indexed words), walking the shortest list and looking the slots up in
// the others.
func (x *wordIndex) holdingAll(words []string) []string {
	lists := make([][]int32, len(words))
	for i, w := range words {
		if l := x.lists[w]; l != nil {
			lists[i] = *l
		}
	}
	slices.SortFunc(lists, func(a, b []int32) int { return len(a) - len(b) })
	var keys []string
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
