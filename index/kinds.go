package index

import (
	"context"
	"fmt"
	"sync"

	"github.com/gleaner-rag/gleaner/graphops"
)

// A KindUpdater keeps the edges of one kind gleaner derives from the whole
// index (mentions) true through changes, so that Apply does not leave
// them stale. It is called in order, change by change, and is not safe
// for concurrent use.
type KindUpdater interface {
	// Kind is the edge kind it maintains.
	Kind() string
	// Update follows ch from before to after (whose nodes, provenance and
	// postings are final; its graph is not) and returns the kind's edges
	// over after's node numbers, in a slice the caller may change (Apply
	// sets their relations in place).
	Update(ctx context.Context, before, after *Index, ch *Change) ([]graphops.Edge, error)
}

// A RowUpdater is a KindUpdater that can say what changed: the sources
// whose edges of its kind change, so that Apply keeps the others' edges
// rather than taking every edge of the kind anew (a commit then costs what
// it changes).
type RowUpdater interface {
	KindUpdater
	// UpdateRows follows ch as Update does and returns the sources
	// (after's numbers, ascending) whose edges of the kind change, and all
	// of their edges (sorted by source, then destination), in a slice the
	// caller may change; the other kept sources keep their edges of the
	// kind, carried over by number.
	UpdateRows(ctx context.Context, before, after *Index, ch *Change) (rows []int32, edges []graphops.Edge, err error)
}

// KindUpdaterFactory makes the updater of a kind for ix, checking that it
// reproduces ix's edges of that kind (an error: they were built with other
// settings or by other means, and go stale on a change instead).
type KindUpdaterFactory func(ctx context.Context, ix *Index) (KindUpdater, error)

var (
	kindMu       sync.RWMutex
	kindUpdaters = map[string]KindUpdaterFactory{}
)

// RegisterKindUpdater registers the updater factory of kind (the package
// that builds the kind registers it in init).
func RegisterKindUpdater(kind string, f KindUpdaterFactory) error {
	kindMu.Lock()
	defer kindMu.Unlock()
	if _, dup := kindUpdaters[kind]; dup {
		return fmt.Errorf("index: kind %q has an updater already", kind)
	}
	kindUpdaters[kind] = f
	return nil
}

// KindUpdaters makes the updaters of ix's derived, fresh edge kinds that
// have a registered factory. A kind whose factory fails is left out (it
// goes stale on a change); why is returned beside.
func KindUpdaters(ctx context.Context, ix *Index) ([]KindUpdater, map[string]error) {
	kindMu.RLock()
	defer kindMu.RUnlock()
	var out []KindUpdater
	var failed map[string]error
	for _, k := range ix.Meta.GraphKinds {
		f, ok := kindUpdaters[k]
		if !ok || !ix.DerivedKind(k) || ix.Meta.StaleKind(k) {
			continue
		}
		u, err := f(ctx, ix)
		if err != nil {
			if failed == nil {
				failed = map[string]error{}
			}
			failed[k] = err
			continue
		}
		out = append(out, u)
	}
	return out, failed
}

// KindEdges are ix's edges of kind, sorted by (source, destination) as
// graph builders return them.
func (ix *Index) KindEdges(kind string) []graphops.Edge {
	var out []graphops.Edge
	g := &ix.Graph().Out
	for u := range ix.N() {
		for p := g.Ptr[u]; p < g.Ptr[u+1]; p++ {
			if ix.rels.Kinds[g.Rel[p]] == kind {
				out = append(out, graphops.Edge{Src: int32(u), Dst: g.Idx[p], W: g.W[p]})
			}
		}
	}
	return out
}
