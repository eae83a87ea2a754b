package index

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/gleaner-rag/gleaner/corpus"
	"github.com/gleaner-rag/gleaner/graphops"
	"github.com/gleaner-rag/gleaner/internal/parallel"
	"github.com/gleaner-rag/gleaner/models"
	"github.com/gleaner-rag/gleaner/models/lexical"
)

// Change is one step from an index to the next: nodes that go and nodes
// that come. The kept nodes keep their order and are renumbered without
// gaps; the added ones follow them in order, so the result is the index a
// build of that corpus makes (Apply says where it differs).
type Change struct {
	Remove []int32       // nodes that go, by internal number (no repeats)
	Add    []corpus.Node // nodes appended after the kept ones
	// Edges are new edges; Src and Dst name kept or added nodes by id.
	Edges []corpus.Edge
	// Vectors are the added nodes' vectors (len(Add)×Dims, normalised
	// here under the cosine metric); nil embeds them with the index's
	// embedder. An index of precomputed vectors needs them.
	Vectors []float32
	// Kinds keep derived edge kinds true (KindUpdaters): their edges are
	// made anew by the updater rather than carried over and marked stale.
	Kinds []KindUpdater
	// Cut names removed nodes whose incoming edges end even when an added
	// node has their id (by default such edges follow it: a replaced
	// document keeps the links into it).
	Cut map[string]bool
	// Count is how many changes ch stands for (Meta.Stale counts them;
	// 0 counts as 1).
	Count int
	// Tombstone marks the removed nodes deleted (deleted.go) instead of
	// renumbering the nodes after them: every other node keeps its number
	// and the added ones follow all of ix's, so the change costs what it
	// adds and removes rather than what the index holds. Without it, a
	// change renumbers, and drops ix's deleted nodes too (Compact).
	Tombstone bool
}

// Apply returns the index that ch makes of ix, held in memory; ix is not
// changed, so its readers are undisturbed, and the result shares ix's
// mapping (ix must stay open while the result is used; closing the result
// leaves ix open). Write stores it (WriteTo).
//
// What equals a build of the final corpus: the node store, BM25's postings
// and statistics (so BM25 scores and rankings), and the edges of the
// corpus's own kinds. What differs: the vectors of added nodes come from
// the stored model (LSA fold-in into the fitted basis, or the text
// embedder), where a build would refit LSA (gleaner index rebuilds, and
// refits); edge kinds built by gleaner from the whole index (mentions,
// knn) and sections whose policy is Rebuild become stale (Meta.Stale):
// their users refuse to answer from them until they are built again.
func (ix *Index) Apply(ctx context.Context, ch *Change) (*Index, error) {
	tomb := ch.Tombstone
	remap, err := ix.remap(ch, tomb)
	if err != nil {
		return nil, err
	}
	// slots is where each of ix's nodes' strings, postings and vectors
	// go: remap, but a tombstoning change keeps them all in place (the
	// graph still drops the removed nodes' rows, by remap).
	slots := remap
	if tomb {
		slots = identity(ix.N())
	}
	out := &Index{Dir: ix.Dir, Manifest: ix.Manifest, r: ix.r, borrowed: true}
	out.Meta = ix.Meta
	// With no node renumbered, the first index applied from ix appends to
	// ix's arrays in place (past their ends, where ix's readers never
	// look) rather than copying them; a second one from ix copies.
	renumbers := !tomb && (len(ch.Remove) > 0 || ix.ndead > 0)
	share := !renumbers && ix.tail.CompareAndSwap(true, false)
	out.tail.Store(true)
	kept := 0
	for _, r := range slots {
		if r >= 0 {
			kept++
		}
	}
	out.Meta.Nodes = kept + len(ch.Add)
	live := out.Meta.Nodes
	if tomb {
		live -= ix.ndead + len(ch.Remove)
	}
	if live == 0 {
		return nil, fmt.Errorf("index: the change leaves the index without nodes")
	}
	out.copyNodes(ctx, ix, slots, ch.Add, share)
	out.copyProvenance(ctx, ix, slots, ch.Add, share)
	if tomb {
		out.withDeleted(ix, ch.Remove)
	}
	if !renumbers {
		out.ids, out.docs = out.appendedIDs(ix, ix.N(), ch.Remove), out.appendedDocCounts(ix, ix.N(), ch.Remove)
	}
	parallel.Yield(ctx) // between stages, each a few ms at most, for a live commit's queries
	texts := make([]string, len(ch.Add))
	for i := range ch.Add {
		texts[i] = IndexText(&ch.Add[i])
	}
	// From the flat form when a checkpoint made one: the segmented form
	// then goes with ix (Remap below maps the term ids).
	if out.Postings, err = ix.Postings.Flattened().Update(ctx, slots, texts); err != nil {
		return nil, err
	}
	parallel.Yield(ctx)
	if out.BM25, err = lexical.NewBM25(out.Postings, ix.BM25Params()); err != nil {
		return nil, err
	}
	out.Meta.Terms, out.Meta.Postings = out.Postings.Terms.Len(), out.Postings.NumPostings()
	parallel.Yield(ctx)
	if err := out.updateVectors(ctx, ix, slots, ch, texts, share); err != nil {
		return nil, err
	}
	parallel.Yield(ctx)
	if err := out.updateGraph(ctx, ix, remap, ch); err != nil {
		return nil, err
	}
	out.carrySections(ix, ch)
	return out, nil
}

// identities holds 0, 1, 2, … for identity, grown as indexes grow: a
// live commit asks for one the size of the index, and read-only it can
// be shared.
var identities struct {
	sync.Mutex
	s []int32
}

// identity is 0, 1, …, n−1, read-only (capacity n: an append copies).
func identity(n int) []int32 {
	identities.Lock()
	defer identities.Unlock()
	if len(identities.s) < n {
		s := make([]int32, max(n, len(identities.s)+len(identities.s)/4))
		for i := range s {
			s[i] = int32(i)
		}
		identities.s = s
	}
	return identities.s[:n:n]
}

// roomFor is the capacity of a copied array of n elements: a quarter
// more, for the next indexes to append into.
func roomFor(n int) int { return n + n/4 + 16 }

// remap numbers the kept nodes after ch (−1: removed, or deleted
// already), checking ch. Tombstoning, a kept node keeps its number.
func (ix *Index) remap(ch *Change, tomb bool) ([]int32, error) {
	remap := make([]int32, ix.N())
	for _, v := range ch.Remove {
		if v < 0 || int(v) >= ix.N() {
			return nil, fmt.Errorf("index: change removes node %d of %d", v, ix.N())
		}
		if ix.IsDeleted(int(v)) {
			return nil, fmt.Errorf("index: change removes node %d (%q), deleted already", v, ix.NodeID(int(v)))
		}
		if remap[v] < 0 {
			return nil, fmt.Errorf("index: change removes node %d (%q) twice", v, ix.NodeID(int(v)))
		}
		remap[v] = -1
	}
	next := int32(0)
	for v := range remap {
		switch {
		case ix.IsDeleted(v):
			remap[v] = -1
		case remap[v] == 0 && tomb:
			remap[v] = int32(v)
		case remap[v] == 0:
			remap[v] = next
			next++
		}
	}
	seen := make(map[string]bool, len(ch.Add))
	for i := range ch.Add {
		n := &ch.Add[i]
		if err := CheckNode(n); err != nil {
			return nil, fmt.Errorf("index: added node %d: %w", i, err)
		}
		if old, ok := ix.Lookup(n.ID); (ok && remap[old] >= 0) || seen[n.ID] {
			return nil, fmt.Errorf("index: added node %d: id %q is already in the index", i, n.ID)
		}
		seen[n.ID] = true
	}
	return remap, nil
}

// CheckNode checks what the node store needs of an added node.
func CheckNode(n *corpus.Node) error {
	switch {
	case strings.TrimSpace(n.ID) == "":
		return fmt.Errorf("field id: empty")
	case strings.TrimSpace(n.Text) == "" && strings.TrimSpace(n.Title) == "":
		return fmt.Errorf("node %q: fields text and title: both empty", n.ID)
	}
	for _, f := range []struct{ name, v string }{{"id", n.ID}, {"title", n.Title}, {"text", n.Text}, {"type", n.Type}, {"doc", n.Doc}, {"section", n.Section}} {
		if !utf8.ValidString(f.v) {
			return fmt.Errorf("node %q: field %s: not valid UTF-8", n.ID, f.name)
		}
	}
	for _, a := range n.Aliases {
		if !utf8.ValidString(a) {
			return fmt.Errorf("node %q: field aliases: not valid UTF-8", n.ID)
		}
		if strings.Contains(a, aliasSep) {
			return fmt.Errorf("node %q: field aliases: %q holds the separator U+001F", n.ID, a)
		}
	}
	if _, err := metaJSON(n.Meta); err != nil {
		return fmt.Errorf("node %q: field meta: %w", n.ID, err)
	}
	return nil
}

// BM25Params are the index's BM25 parameters.
func (ix *Index) BM25Params() lexical.BM25Params {
	prm := lexical.DefaultBM25()
	if k1, ok := ix.Meta.BM25["k1"].(float64); ok {
		prm.K1 = k1
	}
	if b, ok := ix.Meta.BM25["b"].(float64); ok {
		prm.B = b
	}
	return prm
}

// copyNodes fills the node store: ix's kept nodes, then added.
func (out *Index) copyNodes(ctx context.Context, ix *Index, remap []int32, added []corpus.Node, share bool) {
	if share {
		out.strs = parallel.Grow(ctx, ix.strs, addedBytes(added))
		out.off = parallel.Grow(ctx, ix.off, len(added)*nodeFields)
	} else {
		out.off = make([]int64, 1, roomFor(out.Meta.Nodes*nodeFields+1))
		out.strs = make([]byte, 0, roomFor(keptBytes(ix, remap)+addedBytes(added)))
		for v, r := range remap {
			if r < 0 {
				continue
			}
			if v%1024 == 0 {
				parallel.Yield(ctx)
			}
			for f := range nodeFields {
				out.strs = append(out.strs, ix.field(v, f)...)
				out.off = append(out.off, int64(len(out.strs)))
			}
		}
	}
	for i := range added {
		n := &added[i]
		for _, s := range [nodeFields]string{n.ID, n.Title, n.Text, n.Type, strings.Join(n.Aliases, aliasSep)} {
			out.strs = append(out.strs, s...)
			out.off = append(out.off, int64(len(out.strs)))
		}
	}
}

// keptBytes is the size of the kept nodes' strings in ix's node store.
func keptBytes(ix *Index, remap []int32) int {
	n := 0
	for v, r := range remap {
		if r >= 0 {
			n += int(ix.off[(v+1)*nodeFields] - ix.off[v*nodeFields])
		}
	}
	return n
}

// addedBytes is the size of the added nodes' strings in a node store.
func addedBytes(added []corpus.Node) int {
	n := 0
	for i := range added {
		a := &added[i]
		n += len(a.ID) + len(a.Title) + len(a.Text) + len(a.Type) + len(strings.Join(a.Aliases, aliasSep))
	}
	return n
}

// copyProvenance fills the provenance arrays when ix has them or an added
// node needs them.
func (out *Index) copyProvenance(ctx context.Context, ix *Index, remap []int32, added []corpus.Node, share bool) {
	if ix.docOff == nil && !hasProvenance(added) {
		return
	}
	metas := provenanceMetas(added)
	if share && ix.docOff != nil {
		out.docStrs = parallel.Grow(ctx, ix.docStrs, provenanceBytes(added, metas))
		out.docOff = parallel.Grow(ctx, ix.docOff, len(added)*docFields)
		out.spans = parallel.Grow(ctx, ix.spans, 2*len(added))
		out.appendProvenance(added, metas)
		return
	}
	out.docOff = make([]int64, 1, roomFor(out.Meta.Nodes*docFields+1))
	out.spans = make([]int64, 0, roomFor(2*out.Meta.Nodes))
	for v, r := range remap {
		if r < 0 {
			continue
		}
		if v%1024 == 0 {
			parallel.Yield(ctx)
		}
		for f := range docFields {
			out.docStrs = append(out.docStrs, ix.docField(v, f)...)
			out.docOff = append(out.docOff, int64(len(out.docStrs)))
		}
		start, end, ok := ix.Span(v)
		if !ok {
			start, end = -1, -1
		}
		out.spans = append(out.spans, int64(start), int64(end))
	}
	out.appendProvenance(added, metas)
}

// provenanceMetas is the added nodes' metadata as stored.
func provenanceMetas(added []corpus.Node) []string {
	metas := make([]string, len(added))
	for i := range added {
		metas[i], _ = metaJSON(added[i].Meta) // checked by remap (CheckNode)
	}
	return metas
}

// provenanceBytes is the size of the added nodes' provenance strings:
// room to append them into.
func provenanceBytes(added []corpus.Node, metas []string) int {
	n := 0
	for i := range added {
		n += len(added[i].Doc) + len(added[i].Section) + len(metas[i])
	}
	return n
}

// appendProvenance appends the added nodes' provenance (metas:
// provenanceMetas).
func (out *Index) appendProvenance(added []corpus.Node, metas []string) {
	for i := range added {
		n := &added[i]
		for _, s := range [docFields]string{n.Doc, n.Section, metas[i]} {
			out.docStrs = append(out.docStrs, s...)
			out.docOff = append(out.docOff, int64(len(out.docStrs)))
		}
		if n.Span != nil {
			out.spans = append(out.spans, int64(n.Span.Start), int64(n.Span.End))
		} else {
			out.spans = append(out.spans, -1, -1)
		}
	}
	if out.docStrs == nil {
		out.docStrs = []byte{}
	}
}

// updateVectors keeps the kept nodes' rows and embeds the added nodes.
func (out *Index) updateVectors(ctx context.Context, ix *Index, remap []int32, ch *Change, texts []string, share bool) error {
	d := ix.Meta.Dims
	if share {
		out.Vectors = parallel.Grow(ctx, ix.Vectors, len(ch.Add)*d)
	} else {
		out.Vectors = make([]float32, 0, roomFor(out.Meta.Nodes*d))
		for v, r := range remap {
			if r >= 0 {
				out.Vectors = append(out.Vectors, ix.Vector(v)...)
			}
			if v%1024 == 0 {
				parallel.Yield(ctx)
			}
		}
	}
	if ix.LSA != nil {
		out.LSA = ix.LSA.Remap(ix.Postings.Terms, out.Postings.Terms)
		if ch.Tombstone {
			out.dropDeadTerms(ix, ch.Remove)
		}
		out.Embedder = &lexical.LSAEmbedder{M: out.LSA, Terms: out.Postings.Terms}
	} else {
		out.Embedder = ix.Embedder
	}
	add, err := out.addedVectors(ctx, ch, texts)
	if err != nil {
		return err
	}
	out.Vectors = append(out.Vectors, add...)
	return nil
}

// dropDeadTerms takes the LSA row from each word of the removed nodes
// that no live node holds now (an added one may): a renumbering change
// drops such a word from the term table, and with it its row, which a
// word added again later does not get back. So a query, or a passage
// embedded later, embeds as on the renumbered index.
func (out *Index) dropDeadTerms(ix *Index, removed []int32) {
	live := func(d uint32) bool { return !out.IsDeleted(int(d)) }
	seen := map[int]bool{}
	for _, v := range removed {
		n := corpus.Node{Title: ix.Title(int(v)), Text: ix.Text(int(v))}
		for _, w := range lexical.Analyze(IndexText(&n)) {
			t := out.Postings.Terms.Lookup(w)
			if t < 0 || seen[t] || out.LSA.Row[t] < 0 {
				continue
			}
			seen[t] = true
			if !out.Postings.HoldsAny(t, live) {
				out.LSA.Row[t] = -1
			}
		}
	}
}

// addedVectors are the added nodes' vectors: given, or embedded.
func (out *Index) addedVectors(ctx context.Context, ch *Change, texts []string) ([]float32, error) {
	d := out.Meta.Dims
	v := ch.Vectors
	switch {
	case v != nil && len(v) != len(texts)*d:
		return nil, fmt.Errorf("index: change gives %d vector values for %d nodes of %d dims", len(v), len(texts), d)
	case v == nil && len(texts) == 0:
		return nil, nil
	case v == nil && (out.Embedder == nil || out.Meta.Embedder == EmbedderPrecomputed):
		return nil, fmt.Errorf("index: the added nodes need vectors: the index's vectors come from %q, which gleaner cannot run here (give them, or open the index with its embedder)", out.Meta.Embedder)
	case v == nil:
		var err error
		if v, err = out.Embedder.Embed(ctx, texts); err != nil {
			return nil, fmt.Errorf("index: embedding the added nodes: %w", err)
		}
		if len(v) != len(texts)*d {
			return nil, fmt.Errorf("index: embedder %s returned %d values for %d texts of %d dims", out.Embedder.Name(), len(v), len(texts), d)
		}
	default:
		v = slices.Clone(v)
	}
	if err := models.CheckFinite(v, d); err != nil {
		return nil, fmt.Errorf("index: added nodes' vectors: %w", err)
	}
	if out.Meta.Metric == MetricCosine {
		for i := range texts {
			normalize(v[i*d : (i+1)*d]) // a zero row (no known term) stays zero, as a build leaves it
		}
	}
	return v, nil
}

// updateGraph keeps the edges between kept nodes, re-points edges into a
// removed node to the added node of the same id (a replaced document),
// and adds ch's edges.
func (out *Index) updateGraph(ctx context.Context, ix *Index, remap []int32, ch *Change) error {
	ids := make(map[string]int32, len(ch.Add))
	base := int32(out.Meta.Nodes - len(ch.Add))
	for i := range ch.Add {
		ids[ch.Add[i].ID] = base + int32(i)
	}
	out.rels = relationTable{Relations: slices.Clone(ix.rels.Relations), Kinds: slices.Clone(ix.rels.Kinds)}
	// ch's own edges first: one that names no node fails the change
	// before any kind updater follows it (their state would run ahead).
	added, err := out.changeEdges(ix, remap, ch, ids)
	if err != nil {
		return err
	}
	kept, updated, err := out.updateKinds(ctx, ix, ch)
	if err != nil {
		return err
	}
	added = out.withKindEdges(added, ch.Kinds, updated)
	keep := keptEdges(ix, remap, ch, ids, kept)
	if err := out.nextGraph(ctx, ix, remap, ch, kept, keep, added); err != nil {
		return err
	}
	out.Meta.Edges, out.Meta.Relations, out.Meta.GraphKinds = out.graph.edgeCount(), len(out.rels.Relations), out.rels.kindList()
	return nil
}

// withKindEdges is added and the kind updaters' edges, each with its
// kind's relation. The updaters' lists are theirs to give (KindUpdater):
// the relations are set in place, and a lone list with nothing added
// before it is taken as it is (a commit's can hold 10⁵ edges).
func (out *Index) withKindEdges(added []graphops.Edge, kinds []KindUpdater, updated map[string][]graphops.Edge) []graphops.Edge {
	total := len(added)
	for _, u := range kinds {
		es := updated[u.Kind()]
		rel := out.rels.id(u.Kind(), u.Kind()) // as SetGraph names them
		for i := range es {
			es[i].Rel = rel
		}
		total += len(es)
	}
	if len(kinds) == 1 && len(added) == 0 {
		return updated[kinds[0].Kind()]
	}
	added = slices.Grow(added, total-len(added)) // once: these lists can be long
	for _, u := range kinds {
		added = append(added, updated[u.Kind()]...)
	}
	return added
}

// nextGraph makes out's graph from ix's: over blocks when the change
// keeps every node's number and each kind updater names the rows it
// remakes, so that only the rows that may change are looked at and
// copied; flat otherwise.
func (out *Index) nextGraph(ctx context.Context, ix *Index, remap []int32, ch *Change, kept map[string]rowSet, keep graphops.KeepFunc, added []graphops.Edge) error {
	if old, rows, ok := rowsToRewrite(ix, out.Meta.Nodes, remap, ch, kept); ok {
		gb, err := graphops.RewriteBlocks(ctx, old, out.Meta.Nodes, remap, rows, keep, added)
		if err != nil {
			return err
		}
		out.graph = blockGraph(gb)
		return nil
	}
	g := ix.Graph()
	gr, err := graphops.Rewrite(ctx, g, out.Meta.Nodes, remap, func(u int, p int64) (int32, bool) {
		return keep(u, g.Out.Idx[p], g.Out.Rel[p])
	}, added)
	if err != nil {
		return err
	}
	out.graph = flatGraph(gr)
	return nil
}

// rowsToRewrite are ix's graph in blocks and the rows of it whose out
// edges a change may alter beside the added edges' sources: the removed nodes' rows, the rows
// that point into them, and the rows the kind updaters remake. ok is
// false when the change renumbers nodes or an updater remakes its
// kind's every row, or when it leaves fewer than ix's nodes (a
// compaction that drops deleted nodes at the end keeps every other
// number).
func rowsToRewrite(ix *Index, n int, remap []int32, ch *Change, kept map[string]rowSet) (old *graphops.BlockGraph, rows []int32, ok bool) {
	if n < len(remap) {
		return nil, nil, false
	}
	for u, v := range remap {
		if v != int32(u) && v != -1 {
			return nil, nil, false
		}
	}
	for _, k := range ch.Kinds {
		if _, ok := kept[k.Kind()]; !ok {
			return nil, nil, false
		}
	}
	old, err := ix.graphBlocks()
	if err != nil || old.In.Edges() != old.Out.Edges() {
		return nil, nil, false // the in rows are not the out rows' transpose: made anew, flat
	}
	for u, v := range remap {
		if v < 0 {
			rows = append(rows, int32(u))
			src, _, _ := old.In.Row(u)
			rows = append(rows, src...)
		}
	}
	for _, set := range kept {
		for u := range min(len(set), ix.N()) {
			if !set[u] {
				rows = append(rows, int32(u))
			}
		}
	}
	return old, rows, true
}

// keptEdges says where ix's edge from node u to dst (relation rel)
// points after ch, if it stays: not one of a kind whose updater remakes u's row, and not into
// a removed node unless an added node took its id (a replaced document).
func keptEdges(ix *Index, remap []int32, ch *Change, ids map[string]int32, kept map[string]rowSet) graphops.KeepFunc {
	remade := make([]bool, len(ix.rels.Kinds)) // per relation: its kind's updater remakes rows
	rows := make([]rowSet, len(ix.rels.Kinds))
	for _, u := range ch.Kinds {
		for r, k := range ix.rels.Kinds {
			if k == u.Kind() {
				remade[r], rows[r] = true, kept[k]
			}
		}
	}
	return func(u int, v, rel int32) (int32, bool) {
		if remade[rel] && !rows[rel].Has(remap[u]) {
			return 0, false // made anew by the updater
		}
		if r := remap[v]; r >= 0 {
			return r, true
		}
		if id := ix.NodeID(int(v)); !ch.Cut[id] {
			if a, ok := ids[id]; ok {
				return a, true
			}
		}
		return 0, false
	}
}

// changeEdges resolves ch's edges over out's numbers (ids: the added
// nodes'), adding their relations to out's table.
func (out *Index) changeEdges(ix *Index, remap []int32, ch *Change, ids map[string]int32) ([]graphops.Edge, error) {
	resolve := func(id string) (int32, bool) {
		if a, ok := ids[id]; ok {
			return a, true
		}
		if v, ok := ix.Lookup(id); ok && remap[v] >= 0 {
			return remap[v], true
		}
		return -1, false
	}
	edges := make([]graphops.Edge, 0, len(ch.Edges))
	for i, e := range ch.Edges {
		src, ok1 := resolve(e.Src)
		dst, ok2 := resolve(e.Dst)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("index: change edge %d (%q → %q): no such node after the change", i, e.Src, e.Dst)
		}
		w := e.Weight
		if w == 0 {
			w = 1
		}
		edges = append(edges, graphops.Edge{Src: src, Dst: dst, W: float32(w), Rel: out.rels.id(e.Kind, e.Rel)})
	}
	return edges, nil
}

// updateKinds runs ch's kind updaters: the edges each makes, and for a
// RowUpdater the sources (out's numbers) that keep their old edges of its
// kind.
func (out *Index) updateKinds(ctx context.Context, ix *Index, ch *Change) (map[string]rowSet, map[string][]graphops.Edge, error) {
	kept, updated := map[string]rowSet{}, map[string][]graphops.Edge{}
	for _, u := range ch.Kinds {
		var err error
		if ru, ok := u.(RowUpdater); ok {
			var rows []int32
			rows, updated[u.Kind()], err = ru.UpdateRows(ctx, ix, out, ch)
			kept[u.Kind()] = allBut(out.N(), rows)
		} else {
			updated[u.Kind()], err = u.Update(ctx, ix, out, ch)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("index: keeping %s edges: %w", u.Kind(), err)
		}
	}
	return kept, updated, nil
}

// rowSet is a set of node numbers (nil: none).
type rowSet []bool

func (s rowSet) Has(v int32) bool { return v >= 0 && int(v) < len(s) && s[v] }

// allBut is every number below n but rows.
func allBut(n int, rows []int32) rowSet {
	s := make(rowSet, n)
	for i := range s {
		s[i] = true
	}
	for _, r := range rows {
		if r >= 0 && int(r) < n {
			s[r] = false
		}
	}
	return s
}

// id returns the relation id of (kind, rel), adding it when new.
func (t *relationTable) id(kind, rel string) int32 {
	for r := range t.Relations {
		if t.Kinds[r] == kind && t.Relations[r] == rel {
			return int32(r)
		}
	}
	t.Relations, t.Kinds = append(t.Relations, rel), append(t.Kinds, kind)
	return int32(len(t.Relations) - 1)
}

// DerivedKind reports whether gleaner built the edges of kind from the
// whole index (SetGraph names their one relation after the kind), so that
// changed nodes leave them stale; a corpus's own kinds follow its edges.
func (ix *Index) DerivedKind(kind string) bool {
	if kind == "" {
		return false // the corpus's own edges without a kind; gleaner names what it builds
	}
	found := false
	for r := range ix.rels.Relations {
		if ix.rels.Kinds[r] == kind {
			if ix.rels.Relations[r] != kind {
				return false
			}
			found = true
		}
	}
	return found
}

// staleSections carries ix's sections into out, but those stale says go
// stale, and returns the stale record so far (a copy of ix's, with them).
func (out *Index) staleSections(ix *Index, stale func(name string, rec SectionRecord) bool) *Stale {
	st := &Stale{}
	if ix.Meta.Stale != nil {
		*st = *ix.Meta.Stale
		st.Sections, st.GraphKinds, st.Settings = slices.Clone(st.Sections), slices.Clone(st.GraphKinds), maps.Clone(st.Settings)
		// Plain edges (no kind) were taken for a derived kind before
		// DerivedKind said otherwise, and marked stale: never rebuilt, they
		// would stay so.
		st.GraphKinds = slices.DeleteFunc(st.GraphKinds, func(k string) bool { return k == "" })
	}
	out.sections = map[string]loaded{}
	out.Meta.Sections = map[string]SectionRecord{}
	for _, name := range slices.Sorted(maps.Keys(ix.Meta.Sections)) {
		rec := ix.Meta.Sections[name]
		if !stale(name, rec) {
			out.Meta.Sections[name], out.sections[name] = rec, ix.sections[name]
			continue
		}
		if !slices.Contains(st.Sections, name) {
			st.Sections = append(st.Sections, name)
			if len(rec.Meta) > 0 {
				st.setSettings(name, rec.Meta)
			}
		}
	}
	return st
}

// carrySections keeps the sections whose policy is Incremental and marks
// the rest, and the derived edge kinds, stale.
func (out *Index) carrySections(ix *Index, ch *Change) {
	if len(ch.Remove)+len(ch.Add)+len(ch.Edges) == 0 {
		out.sections, out.Meta.Stale = ix.sections, ix.Meta.Stale
		return
	}
	st := out.staleSections(ix, func(_ string, rec SectionRecord) bool { return rec.Update != Incremental })
	for _, k := range out.Meta.GraphKinds {
		maintained := slices.ContainsFunc(ch.Kinds, func(u KindUpdater) bool { return u.Kind() == k })
		if ix.DerivedKind(k) && !maintained && !slices.Contains(st.GraphKinds, k) {
			st.GraphKinds = append(st.GraphKinds, k)
		}
	}
	st.Changes += int64(max(ch.Count, 1))
	out.Meta.Stale = nil // ix's, unless something is still stale (a dropped plain-edge mark was all)
	if len(st.Sections)+len(st.GraphKinds) > 0 {
		out.Meta.Stale = st
	}
}
