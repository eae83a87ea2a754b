package strtab

import (
	"fmt"
	"math"
	"slices"
)

// Sets holds many ascending sets of int32 in one array, so that the
// collector sees two objects where a slice per set would be one each: a
// live index's mention state holds hundreds of thousands of small sets,
// and marking them was most of a collection's work. The zero value is
// an empty pool; sets are numbered by the caller, densely from 0. A set outgrows
// its room by moving to the end of the array; the rooms left behind are
// reclaimed by a compaction once they are half the array. The slices of
// Get are views, valid until the pool next changes.
type Sets struct {
	data []int32
	sets []room // set number → its room
	dead int    // entries of data no set uses
}

// room is where a set lies in data: n entries of a room of c.
type room struct {
	off  int
	n, c int32
}

// Get is set i (empty when never filled); do not keep it past a change.
func (p *Sets) Get(i int32) []int32 {
	if int(i) >= len(p.sets) {
		return nil
	}
	r := p.sets[i]
	return p.data[r.off : r.off+int(r.n) : r.off+int(r.n)]
}

// Size is set i's number of entries.
func (p *Sets) Size(i int32) int {
	if int(i) >= len(p.sets) {
		return 0
	}
	return int(p.sets[i].n)
}

// Insert adds v to set i.
func (p *Sets) Insert(i, v int32) {
	p.ensure(i)
	s := p.Get(i)
	k, ok := slices.BinarySearch(s, v)
	if ok {
		return
	}
	r := &p.sets[i]
	if r.n == r.c {
		p.move(i, max(2, 2*int(r.c)))
		r = &p.sets[i]
	}
	room := p.data[r.off : r.off+int(r.n)+1]
	copy(room[k+1:], room[k:])
	room[k] = v
	r.n++
	p.compactIfSparse()
}

// Remove takes v out of set i.
func (p *Sets) Remove(i, v int32) {
	s := p.Get(i)
	k, ok := slices.BinarySearch(s, v)
	if !ok {
		return
	}
	copy(s[k:], s[k+1:])
	r := &p.sets[i]
	r.n--
	p.shrink(i)
}

// shrink gives a set that fell to a quarter of its room a room of twice
// its size (none when empty).
func (p *Sets) shrink(i int32) {
	switch r := p.sets[i]; {
	case r.n == 0:
		p.Clear(i)
	case r.c > 16 && r.n < r.c/4:
		p.move(i, 2*int(r.n))
		p.compactIfSparse()
	}
}

// Renumber maps each entry v of set i to to[v], dropping those mapped
// below 0; to must keep the order of the entries it keeps.
func (p *Sets) Renumber(i int32, to []int32) {
	s := p.Get(i)
	kept := s[:0]
	for _, v := range s {
		if w := to[v]; w >= 0 {
			kept = append(kept, w)
		}
	}
	p.sets[i].n = int32(len(kept))
	p.shrink(i)
}

// Clear empties set i and gives up its room.
func (p *Sets) Clear(i int32) {
	if int(i) >= len(p.sets) {
		return
	}
	p.dead += int(p.sets[i].c)
	p.sets[i] = room{}
	p.compactIfSparse()
}

// move gives set i a room of c entries at the end of data (no
// compaction: the caller fills the room first).
func (p *Sets) move(i int32, c int) {
	if c > math.MaxInt32 {
		panic(fmt.Sprintf("strtab: a set of %d entries cannot grow", p.sets[i].n))
	}
	r := p.sets[i]
	off := len(p.data)
	p.data = slices.Grow(p.data, c)[:off+c]
	copy(p.data[off:], p.data[r.off:r.off+int(r.n)])
	p.dead += int(r.c)
	p.sets[i] = room{off: off, n: r.n, c: int32(c)}
}

// ensure makes set number i exist.
func (p *Sets) ensure(i int32) {
	if int(i) >= len(p.sets) {
		p.sets = append(p.sets, make([]room, int(i)+1-len(p.sets))...)
	}
}

// compactIfSparse packs the sets into a new array once the rooms no set
// uses are half of it, each set keeping a little room to grow.
func (p *Sets) compactIfSparse() {
	if p.dead < 1024 || 2*p.dead < len(p.data) {
		return
	}
	live := 0
	for _, r := range p.sets {
		live += int(r.n) + int(r.n)/4
	}
	data := make([]int32, 0, live+live/4)
	for i, r := range p.sets {
		if r.n == 0 {
			continue
		}
		off := len(data)
		c := int(r.n) + int(r.n)/4
		data = append(data, p.data[r.off:r.off+int(r.n)]...)
		data = append(data, make([]int32, c-int(r.n))...)
		p.sets[i] = room{off: off, n: r.n, c: int32(c)}
	}
	p.data, p.dead = data, 0
}
