package index

import "maps"

// idTable maps node ids to numbers. Building one costs a pass over every
// node, so an index applied from another by appending nodes shares its
// parent's map (base, never written once shared) and keeps its own map of
// the ids appended since (added), until those pass an eighth of base and
// the next Lookup builds a whole one again: a live commit costs what it
// adds, not what the index holds. An id whose node was deleted since is
// −1 in added (until a later node takes it).
type idTable struct {
	base  map[string]int32
	added map[string]int32
}

func (t *idTable) lookup(id string) (int32, bool) {
	if v, ok := t.added[id]; ok {
		return v, v >= 0
	}
	v, ok := t.base[id]
	return v, ok
}

// ownIDs builds ix's whole id table.
func ownIDs(ix *Index) *idTable {
	t := &idTable{base: make(map[string]int32, ix.Live())}
	for i := range ix.N() {
		if !ix.IsDeleted(i) {
			t.base[ix.NodeID(i)] = int32(i)
		}
	}
	return t
}

// idTable is ix's table, built on first use.
func (ix *Index) idTable() *idTable {
	ix.idsOnce.Do(func() {
		if ix.ids == nil {
			ix.ids = ownIDs(ix)
		}
	})
	return ix.ids
}

// appendedIDs is the table of out, which deleted removed and appended
// nodes from number first on to ix's (nil, built on first use, when the
// layer would grow past an eighth of the shared map). The keys are out's
// own node ids: a cut of a caller's string would keep the caller's memory
// alive.
func (out *Index) appendedIDs(ix *Index, first int, removed []int32) *idTable {
	t := ix.idTable()
	n := out.N() - first + len(removed)
	if len(t.added)+n > ix.N()/8 {
		return nil
	}
	added := make(map[string]int32, len(t.added)+n)
	maps.Copy(added, t.added)
	for _, v := range removed {
		added[out.NodeID(int(v))] = -1
	}
	for v := first; v < out.N(); v++ {
		added[out.NodeID(v)] = int32(v)
	}
	return &idTable{base: t.base, added: added}
}

// docCounts counts the passages of each document cut into passages, shared
// with appended indexes as idTable is.
type docCounts struct {
	base  map[string]int
	added map[string]int
}

func (c *docCounts) count(doc string) int { return c.base[doc] + c.added[doc] }

// ownDocCounts counts ix's documents' passages.
func ownDocCounts(ix *Index) *docCounts {
	c := &docCounts{base: map[string]int{}}
	if ix.docOff == nil {
		return c // no node was cut from a document
	}
	for i := range ix.N() {
		if d := ix.docField(i, 0); d != "" && !ix.IsDeleted(i) {
			c.base[d]++
		}
	}
	return c
}

// docCounts is ix's count, made on first use.
func (ix *Index) docCounts() *docCounts {
	ix.docsOnce.Do(func() {
		if ix.docs == nil {
			ix.docs = ownDocCounts(ix)
		}
	})
	return ix.docs
}

// appendedDocCounts is docCounts's appendedIDs (added holds changes to
// base's counts, which a deletion makes negative).
func (out *Index) appendedDocCounts(ix *Index, first int, removed []int32) *docCounts {
	if out.docOff == nil {
		return &docCounts{} // none cut from a document: nothing to count on first use either
	}
	c := ix.docCounts()
	n := out.N() - first + len(removed)
	if len(c.added)+n > ix.N()/8 {
		return nil
	}
	added := maps.Clone(c.added)
	if added == nil {
		added = map[string]int{}
	}
	for _, v := range removed {
		if d := out.docField(int(v), 0); d != "" {
			added[d]--
		}
	}
	for v := first; v < out.N(); v++ {
		if d := out.docField(v, 0); d != "" {
			added[d]++
		}
	}
	return &docCounts{base: c.base, added: added}
}
