package live

import (
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/internal/strtab"
	"github.com/gleaner-rag/gleaner/models"
)

// catalog maps the current index's documents to their nodes and back, by
// id, kept up to date change by change (an index's own Lookup table is
// rebuilt for every snapshot). It holds the ids in strtab tables, which
// copy them (ix may be an index in memory, which a string cut from it
// would keep alive) and which the collector does not scan: maps keyed by
// id were most of what it marked on every cycle of a live server.
type catalog struct {
	nodes, docs strtab.Names
	docOf       []int32     // node number → document number
	nodesOf     strtab.Sets // document number → node numbers
}

func newCatalog(ix *index.Index) *catalog {
	c := &catalog{nodes: strtab.NewNames(), docs: strtab.NewNames()}
	for i := range ix.N() {
		if !ix.IsDeleted(i) {
			c.addNode(ix.Document(i), ix.NodeID(i))
		}
	}
	return c
}

// addNode records node id as a passage of document doc.
func (c *catalog) addNode(doc, id string) {
	d, ok := c.docs.ID(doc)
	if !ok {
		d = c.docs.Add(doc)
	}
	n, ok := c.nodes.ID(id)
	if ok { // a node moving between documents: checks keep this from happening
		from := c.docOf[n]
		if c.nodesOf.Remove(from, n); c.nodesOf.Size(from) == 0 && from != d {
			c.docs.Remove(from)
			c.docs.Release()
		}
	} else {
		n = c.nodes.Add(id)
	}
	if int(n) >= len(c.docOf) {
		c.docOf = append(c.docOf, make([]int32, int(n)+1-len(c.docOf))...)
	}
	c.docOf[n] = d
	c.nodesOf.Insert(d, n)
}

// docNodes lists document doc's node ids.
func (c *catalog) docNodes(doc string) ([]string, bool) {
	d, ok := c.docs.ID(doc)
	if !ok {
		return nil, false
	}
	ns := c.nodesOf.Get(d)
	ids := make([]string, len(ns))
	for i, n := range ns {
		ids[i] = c.nodes.Name(n)
	}
	return ids, true
}

// docOfNode is node id's document.
func (c *catalog) docOfNode(id string) (string, bool) {
	n, ok := c.nodes.ID(id)
	if !ok {
		return "", false
	}
	return c.docs.Name(c.docOf[n]), true
}

// deleteDoc forgets document doc and its nodes.
func (c *catalog) deleteDoc(doc string) {
	d, ok := c.docs.ID(doc)
	if !ok {
		return
	}
	for _, n := range c.nodesOf.Get(d) {
		c.nodes.Remove(n)
	}
	c.nodesOf.Clear(d)
	c.docs.Remove(d)
	c.nodes.Release() // nothing holds a number past this call
	c.docs.Release()
}

// pending gathers accepted batches into one index.Change over base.
type pending struct {
	base    *index.Index
	cat     *catalog
	dims    int
	remove  map[int32]bool
	add     []corpus.Node
	vecs    [][]float32 // per added node
	dropped []bool
	addAt   map[string]int // live added node id → position in add
	edges   []ownedEdge
	ops     int
	count   int             // nodes after the accepted batches
	cut     map[string]bool // deleted nodes whose incoming edges end (see deleteDoc)
}

// ownedEdge is an edge with the added node it starts from.
type ownedEdge struct {
	e     corpus.Edge
	owner int
	dead  bool // its destination was deleted after it was added
}

func newPending(base *index.Index, cat *catalog) *pending {
	return &pending{base: base, cat: cat, dims: base.Meta.Dims, remove: map[int32]bool{}, addAt: map[string]int{},
		count: base.Live(), cut: map[string]bool{}}
}

// overlay is one batch's view of the catalog while it is checked: what
// it deleted and added so far.
type overlay struct {
	delta   int // nodes added less nodes removed
	cat     *catalog
	docs    map[string][]string // nil value: deleted
	nodeDoc map[string]string   // "" value: deleted
}

func (o *overlay) doc(id string) ([]string, bool) {
	if n, ok := o.docs[id]; ok {
		return n, n != nil
	}
	return o.cat.docNodes(id)
}

func (o *overlay) nodeOf(id string) (string, bool) {
	if d, ok := o.nodeDoc[id]; ok {
		return d, d != ""
	}
	return o.cat.docOfNode(id)
}

// CheckError is a batch that failed its checks: nothing of it was
// committed. It wraps ErrExists or ErrNotFound where one applies.
type CheckError struct{ Err error }

func (e *CheckError) Error() string { return e.Err.Error() }
func (e *CheckError) Unwrap() error { return e.Err }

// IsInvalid reports whether err is a batch's failed check (the caller's
// to fix), not a failure of the writer.
func IsInvalid(err error) bool {
	var ce *CheckError
	return errors.As(err, &ce)
}

// check verifies a batch against the catalog as the pending changes left
// it, without changing anything.
func (p *pending) check(ops []op) error {
	o := &overlay{cat: p.cat, docs: map[string][]string{}, nodeDoc: map[string]string{}}
	for i := range ops {
		if err := o.apply(&ops[i], p.dims); err != nil {
			return &CheckError{fmt.Errorf("change %d (%s %q): %w", i+1, ops[i].Kind, ops[i].ID, err)}
		}
	}
	if p.count+o.delta < 1 {
		return &CheckError{fmt.Errorf("the batch would leave the index without passages (an index holds at least one): add before you delete the last")}
	}
	for i := range ops {
		for _, e := range ops[i].Edges {
			if p.base.DerivedKind(e.Kind) {
				return &CheckError{fmt.Errorf("change %d (%s %q): edge %q → %q: kind %q is built by gleaner from the index, not given", i+1, ops[i].Kind, ops[i].ID, e.Src, e.Dst, e.Kind)}
			}
			if _, ok := o.nodeOf(e.Dst); !ok {
				return &CheckError{fmt.Errorf("change %d (%s %q): edge %q → %q: no node %q", i+1, ops[i].Kind, ops[i].ID, e.Src, e.Dst, e.Dst)}
			}
		}
	}
	return nil
}

func (o *overlay) apply(x *op, dims int) error {
	if x.ID == "" {
		return fmt.Errorf("field id: empty")
	}
	nodes, exists := o.doc(x.ID)
	switch x.Kind {
	case opDelete:
		if !exists {
			if d, ok := o.nodeOf(x.ID); ok {
				return fmt.Errorf("%w: %q is a passage of document %q; delete the document", ErrNotFound, x.ID, d)
			}
			return fmt.Errorf("%w: no document %q", ErrNotFound, x.ID)
		}
		o.drop(x.ID, nodes)
		return nil
	case opAdd:
		if _, ours := o.docs[x.ID]; exists && ours {
			return fmt.Errorf("document %q is added by an earlier change of this batch (a batch adds a document once)", x.ID)
		}
		if exists {
			return fmt.Errorf("%w: document %q", ErrExists, x.ID)
		}
	case opReplace:
		if exists {
			o.drop(x.ID, nodes)
		}
	default:
		return fmt.Errorf("unknown change %q", x.Kind)
	}
	return o.put(x, dims)
}

func (o *overlay) drop(id string, nodes []string) {
	o.delta -= len(nodes)
	o.docs[id] = nil
	for _, n := range nodes {
		o.nodeDoc[n] = ""
	}
}

// put checks an added document's nodes, edges and vectors and records it.
func (o *overlay) put(x *op, dims int) error {
	if len(x.Nodes) == 0 {
		return fmt.Errorf("field nodes: a document needs at least one passage")
	}
	if d, ok := o.nodeOf(x.ID); ok && d != x.ID {
		return fmt.Errorf("%w: %q is already a passage of document %q", ErrExists, x.ID, d)
	}
	ids := make([]string, 0, len(x.Nodes))
	for j := range x.Nodes {
		n := &x.Nodes[j]
		if n.Document() != x.ID {
			return fmt.Errorf("node %d (%q): belongs to document %q, not %q (set its doc field)", j+1, n.ID, n.Document(), x.ID)
		}
		if err := index.CheckNode(n); err != nil {
			return fmt.Errorf("node %d: %w", j+1, err)
		}
		if d, ok := o.nodeOf(n.ID); ok {
			return fmt.Errorf("%w: node %q is already a passage of document %q", ErrExists, n.ID, d)
		}
		if _, ok := o.doc(n.ID); ok && n.ID != x.ID {
			return fmt.Errorf("%w: node id %q is the id of another document", ErrExists, n.ID)
		}
		if slices.Contains(ids, n.ID) {
			return fmt.Errorf("node %q twice", n.ID)
		}
		ids = append(ids, n.ID)
	}
	for k, e := range x.Edges {
		if !slices.Contains(ids, e.Src) {
			return fmt.Errorf("edge %d (%q → %q): its source is not a passage of this document (edges belong to the document they start from)", k+1, e.Src, e.Dst)
		}
		for _, f := range []struct{ name, v string }{{"dst", e.Dst}, {"kind", e.Kind}, {"rel", e.Rel}} {
			if !utf8.ValidString(f.v) {
				// the log stores JSON, which would turn the bytes into U+FFFD
				return fmt.Errorf("edge %d (from %q): field %s: not valid UTF-8", k+1, e.Src, f.name)
			}
		}
	}
	if x.Vectors != nil {
		if len(x.Vectors) != 4*len(x.Nodes)*dims {
			return fmt.Errorf("field vectors: %d values for %d nodes of %d dims", len(x.Vectors)/4, len(x.Nodes), dims)
		}
		v, err := unpackFloats(x.Vectors)
		if err == nil {
			err = models.CheckFinite(v, dims)
		}
		if err != nil {
			return fmt.Errorf("field vectors: %w", err)
		}
	}
	o.delta += len(x.Nodes)
	o.docs[x.ID] = ids
	for _, n := range ids {
		o.nodeDoc[n] = x.ID
	}
	return nil
}

// CheckNew refuses what this version refuses of new content but a log
// written before it may hold: a document or passage id the index does not
// hold yet with white space or a control character (as a corpus file
// refuses it; a newline would make it undeletable from a list of ids),
// and a passage over corpus.MaxRecordBytes. An id the index holds passes,
// so an older document can still be replaced. The writer runs it on its
// own new writes only, not on a log's batches (a replay, a merge's
// catch-up, a fleet replica), which it applies as older versions did; a
// fleet's server runs it before it publishes a write. Safe for
// concurrent use: it reads the index as last published.
func (w *Writer) CheckNew(b *Batch) error { return checkNew(w.Index(), b.ops) }

func checkNew(ix *index.Index, ops []op) error {
	for i := range ops {
		if x := &ops[i]; x.Kind != opDelete {
			if err := checkNewOp(ix, x); err != nil {
				return &CheckError{fmt.Errorf("change %d (%s %q): %w", i+1, x.Kind, x.ID, err)}
			}
		}
	}
	return nil
}

func checkNewOp(ix *index.Index, x *op) error {
	if ix.DocumentSize(x.ID) == 0 {
		if err := corpus.CheckID(x.ID); err != nil {
			return fmt.Errorf("field id: %w", err)
		}
	}
	for j := range x.Nodes {
		n := &x.Nodes[j]
		if _, ok := ix.Lookup(n.ID); !ok {
			if err := corpus.CheckID(n.ID); err != nil {
				return fmt.Errorf("node %d: field id: %w", j+1, err)
			}
		}
		if err := corpus.CheckRecordSize(n); err != nil {
			return fmt.Errorf("node %d: field text: %w", j+1, err)
		}
	}
	return nil
}

// take checks a batch and accepts it.
func (p *pending) take(ops []op) error {
	if err := p.check(ops); err != nil {
		return err
	}
	return p.accept(ops)
}

// accept applies a checked batch to the catalog and the pending change.
func (p *pending) accept(ops []op) error {
	for i := range ops {
		x := &ops[i]
		if nodes, ok := p.cat.docNodes(x.ID); ok && x.Kind != opAdd {
			p.deleteDoc(x.ID, nodes, keptIDs(x))
		}
		if x.Kind == opDelete {
			continue
		}
		if err := p.addDoc(x); err != nil {
			return err
		}
	}
	p.ops += len(ops)
	return nil
}

// keptIDs are the node ids a replace brings back (edges into them follow
// the new passages, as a rebuild from the changed corpus has them).
func keptIDs(x *op) map[string]bool {
	if x.Kind != opReplace {
		return nil
	}
	ids := make(map[string]bool, len(x.Nodes))
	for _, n := range x.Nodes {
		ids[n.ID] = true
	}
	return ids
}

// deleteDoc removes a document's nodes. Edges into a node that its
// replacement does not bring back end here, even if a later batch adds a
// node of that id: the same batches committed one by one would have
// dropped them, and the grouping must not change the graph.
func (p *pending) deleteDoc(id string, nodes []string, kept map[string]bool) {
	p.count -= len(nodes)
	for _, n := range nodes {
		if !kept[n] {
			p.cut[n] = true
			for i := range p.edges {
				if p.edges[i].e.Dst == n {
					p.edges[i].dead = true
				}
			}
		}
		if at, ok := p.addAt[n]; ok {
			p.dropped[at] = true
			delete(p.addAt, n)
		} else if v, ok := p.base.Lookup(n); ok {
			p.remove[v] = true
		}
	}
	p.cat.deleteDoc(id)
}

func (p *pending) addDoc(x *op) error {
	var vecs []float32
	if x.Vectors != nil {
		var err error
		if vecs, err = unpackFloats(x.Vectors); err != nil {
			return err
		}
	}
	ids := make([]string, len(x.Nodes))
	first := len(p.add)
	p.count += len(x.Nodes)
	for j, n := range x.Nodes {
		ids[j] = n.ID
		p.addAt[n.ID] = len(p.add)
		p.cat.addNode(x.ID, n.ID)
		p.add = append(p.add, n)
		p.dropped = append(p.dropped, false)
		var v []float32
		if vecs != nil {
			v = vecs[j*p.dims : (j+1)*p.dims]
		}
		p.vecs = append(p.vecs, v)
	}
	for _, e := range x.Edges {
		p.edges = append(p.edges, ownedEdge{e: e, owner: first + slices.Index(ids, e.Src)})
	}
	return nil
}

// change is the index.Change the accepted batches make. Vectors are
// given for every added node or none (the writer embeds before it logs).
func (p *pending) change() *index.Change {
	ch := &index.Change{}
	for v := range p.remove {
		ch.Remove = append(ch.Remove, v)
	}
	slices.Sort(ch.Remove)
	for i, n := range p.add {
		if p.dropped[i] {
			continue
		}
		ch.Add = append(ch.Add, n)
		if p.vecs[i] != nil {
			ch.Vectors = append(ch.Vectors, p.vecs[i]...)
		}
	}
	for _, oe := range p.edges {
		if !oe.dead && !p.dropped[oe.owner] && p.alive(oe.e.Dst) {
			ch.Edges = append(ch.Edges, oe.e)
		}
	}
	ch.Cut, ch.Count = p.cut, p.ops
	return ch
}

// alive reports whether node id is in the index the change makes.
func (p *pending) alive(id string) bool {
	if _, ok := p.addAt[id]; ok {
		return true
	}
	v, ok := p.base.Lookup(id)
	return ok && !p.remove[v]
}

// empty reports whether nothing was accepted.
func (p *pending) empty() bool { return p.ops == 0 }
