package index

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/graphops"
)

// graphFiles are rewritten by SetGraph; every other file is copied.
var graphFiles = []string{fOutPtr, fOutIdx, fOutW, fOutRel, fInPtr, fInIdx, fInW, fInRel, fRelations}

// SetGraph replaces the edges of one kind (e.g. "mentions", "knn") in the
// index at dir with edges over internal node numbers, keeping the edges of
// other kinds, so several graphs coexist. The new index is written beside
// the old one and swapped in atomically. The relation of the new edges is
// named after the kind.
func SetGraph(ctx context.Context, dir, kind string, edges []graphops.Edge) error {
	return SetGraphWith(ctx, dir, kind, edges, nil)
}

// SetGraphWith is SetGraph recording the settings the edges were built
// with (Meta.KindSettings; nil records none), for the kind's updater.
func SetGraphWith(ctx context.Context, dir, kind string, edges []graphops.Edge, settings any) error {
	var raw json.RawMessage
	if settings != nil {
		var err error
		if raw, err = json.Marshal(settings); err != nil {
			return fmt.Errorf("index: %s settings: %w", kind, err)
		}
	}
	ix, err := Open(dir, store.OpenOptions{})
	if err != nil {
		return err
	}
	defer ix.Close()
	kept, rels := ix.edgesExcept(kind)
	rel := int32(len(rels.Relations))
	rels.Relations, rels.Kinds = append(rels.Relations, kind), append(rels.Kinds, kind)
	for _, e := range edges {
		if e.Src < 0 || int(e.Src) >= ix.N() || e.Dst < 0 || int(e.Dst) >= ix.N() {
			return fmt.Errorf("index: %s edge %d→%d outside %d nodes", kind, e.Src, e.Dst, ix.N())
		}
		e.Rel = rel
		kept = append(kept, e)
	}
	g, err := graphops.Build(ix.N(), kept, true)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return ix.rewriteGraph(dir, &built{graph: g, rels: rels}, kind, raw)
}

// edgesExcept lists the edges whose relation is not of kind, with the
// relation table renumbered.
func (ix *Index) edgesExcept(kind string) ([]graphops.Edge, relationTable) {
	var rels relationTable
	remap := make([]int32, len(ix.rels.Relations))
	for r := range ix.rels.Relations {
		remap[r] = -1
		if ix.rels.Kinds[r] != kind {
			remap[r] = int32(len(rels.Relations))
			rels.Relations = append(rels.Relations, ix.rels.Relations[r])
			rels.Kinds = append(rels.Kinds, ix.rels.Kinds[r])
		}
	}
	var out []graphops.Edge
	g := &ix.Graph().Out
	for v := 0; v < ix.N(); v++ {
		for p := g.Ptr[v]; p < g.Ptr[v+1]; p++ {
			if r := remap[g.Rel[p]]; r >= 0 {
				out = append(out, graphops.Edge{Src: int32(v), Dst: g.Idx[p], W: g.W[p], Rel: r})
			}
		}
	}
	return out, rels
}

// rewriteGraph writes a copy of the index with b's graph in place of the
// old one.
func (ix *Index) rewriteGraph(dir string, b *built, kind string, settings json.RawMessage) error {
	meta := ix.Meta
	meta.Stale = meta.Stale.without("", kind)
	meta.KindSettings = maps.Clone(meta.KindSettings)
	delete(meta.KindSettings, kind)
	if settings != nil {
		if meta.KindSettings == nil {
			meta.KindSettings = map[string]json.RawMessage{}
		}
		meta.KindSettings[kind] = settings
	}
	meta.Edges = len(b.graph.Out.Idx)
	meta.Relations = len(b.rels.Relations)
	meta.GraphKinds = b.rels.kindList()
	return ix.rewrite(dir, graphFiles, b.writeGraph, &meta)
}

// rewrite writes a copy of the index at dir without the files in drop,
// plus whatever add writes, under meta (read after add, which may complete
// it); the copy replaces the index atomically.
func (ix *Index) rewrite(dir string, drop []string, add func(*store.Writer) error, meta *Meta) error {
	if err := checkNoWriter(dir); err != nil {
		return err
	}
	if st, err := os.Stat(dir); err == nil && st.Mode().Perm()&0o200 == 0 {
		return fmt.Errorf("index %s is read-only (mode %v): refusing to replace it; make it writable first", dir, st.Mode().Perm())
	}
	return store.Build(dir, func(w *store.Writer) (map[string]any, error) {
		for name := range ix.Manifest.Files {
			if slices.Contains(drop, name) {
				continue
			}
			data, fi, _ := ix.r.Raw(name)
			if err := w.Stream(name, fi.Kind, func(out io.Writer) error { _, err := out.Write(data); return err }); err != nil {
				return nil, err
			}
		}
		if err := add(w); err != nil {
			return nil, err
		}
		if err := ix.unchanged(dir); err != nil {
			return nil, err
		}
		return map[string]any{"index": *meta}, nil
	})
}

// ErrChanged is returned when another writer replaced the index while a
// rewrite was being built from it; run the command again.
var ErrChanged = errors.New("the index changed while this rewrite was built from it (another build finished first); run it again")

// unchanged checks, just before the swap, that the index at dir is still
// the one ix opened, so two concurrent rewrites (graph build --kind knn and
// --kind trigraph) cannot silently drop each other's work. The window left
// is the swap itself (milliseconds, against a build of seconds).
func (ix *Index) unchanged(dir string) error { return checkManifest(dir, ix.Manifest.Checksum) }

// View returns the graph every method and Topological Recall use: the
// simple undirected graph over the edges of the given kinds (none: all
// kinds), with parallel edges merged (weights summed) and self-loops
// dropped, so a node's degree is its number of distinct neighbours
// (graphops.Simplify). Views are built once per kind set and shared; they
// are read-only and safe for concurrent use.
func (ix *Index) View(kinds ...string) *graphops.Adjacency {
	key := slices.Clone(kinds)
	slices.Sort(key)
	key = slices.Compact(key)
	name := strings.Join(key, ",")
	ix.viewMu.Lock()
	defer ix.viewMu.Unlock()
	if v, ok := ix.views[name]; ok {
		return v
	}
	if ix.views == nil {
		ix.views = map[string]*graphops.Adjacency{}
	}
	v := graphops.Simplify(ix.Adjacency(true, key...))
	ix.views[name] = v
	return v
}

// Adjacency returns the raw undirected view of the index's graph restricted
// to the given edge kinds (none: all kinds), with igraph's multigraph
// semantics (parallel edges and self-loops kept); methods use View.
func (ix *Index) Adjacency(weighted bool, kinds ...string) *graphops.Adjacency {
	var keep func(int32) bool
	if len(kinds) > 0 {
		keep = func(r int32) bool { return slices.Contains(kinds, ix.rels.Kinds[r]) }
	}
	return graphops.Undirected(ix.Graph(), weighted, keep)
}

// TermDocs are the index's postings as graphops reads them (the lexical
// neighbours of the knn graph).
func (ix *Index) TermDocs() graphops.TermDocs {
	p := ix.Postings.Flat()
	return graphops.TermDocs{N: ix.N(), Ptr: p.Ptr, Doc: p.Doc}
}
